"""The ASGI app Peregrine needs even when `--static-dir` serves every file
(scripts/peer-server.sh). `--static-dir` answers `/` with a 404 (it has no
index file), so the app answers `/` with the folder's index.html, as every
other row does; anything else the folder lacks gets a 404."""

import os

INDEX = os.path.join(os.environ.get("H3LAB_ROOT", "."), "index.html")


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/" and os.path.isfile(INDEX):
        with open(INDEX, "rb") as file:
            body = file.read()
        headers = [
            (b"content-type", b"text/html"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
