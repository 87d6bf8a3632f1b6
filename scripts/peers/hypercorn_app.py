"""Starlette's StaticFiles over H3LAB_ROOT with `Cache-Control: no-store`,
for hypercorn (h1 and h2 on TCP, h3 through aioquic) in
scripts/peer-server.sh."""

import os

from starlette.staticfiles import StaticFiles

files = StaticFiles(directory=os.environ["H3LAB_ROOT"], html=True)


async def app(scope, receive, send):
    async def send_no_store(message):
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"cache-control", b"no-store")]
        await send(message)

    await files(scope, receive, send_no_store)
