"""The ASGI app Peregrine needs even when `--static-dir` serves every file
(scripts/peer-server.sh): it answers only what the static folder does not
have, with a 404."""


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
