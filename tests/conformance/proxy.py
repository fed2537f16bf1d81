"""A reverse proxy that adds `Authorization: Bearer <token>` to every request.

The conformance suite cannot send a header of its own, and `toolshed serve` refuses any
request without the token, so the suite talks to this proxy instead:

    CONFORMANCE_TOKEN=... python proxy.py --upstream http://127.0.0.1:PORT [--port 0]

It prints `proxy listening on http://127.0.0.1:PORT/mcp` once it accepts connections.
Bodies stream both ways (server-sent events arrive as they are sent). A loopback `Host`
naming the proxy is rewritten to name the upstream, since toolshed checks the port too;
any other `Host` (the suite's DNS-rebinding probe) and every `Origin` pass unchanged, so
toolshed's own checks are what the suite measures. Needs uvicorn and httpx2 (the repo's
.venv has both, through the `mcp` package).
"""

import argparse
import asyncio
import os
import socket
import sys
from urllib.parse import urlsplit

import httpx2 as httpx
import uvicorn

HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te", b"upgrade"}
LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}


def make_app(upstream: str, token: str, own_port: int):
    client = httpx.AsyncClient(timeout=None)
    up = urlsplit(upstream)

    def rewrite_host(value: bytes) -> bytes:
        name, _, port = value.decode("latin-1").rpartition(":")
        if name in LOOPBACK and port == str(own_port):
            return f"{name}:{up.port}".encode()
        return value

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = []
        for name, value in scope["headers"]:
            if name in HOP_BY_HOP or name == b"authorization":
                continue
            headers.append((name, rewrite_host(value) if name == b"host" else value))
        headers.append((b"authorization", f"Bearer {token}".encode()))
        query = scope["query_string"].decode()
        url = f"{up.scheme}://{up.netloc}{scope['path']}" + (f"?{query}" if query else "")
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as e:
            await send({"type": "http.response.start", "status": 502, "headers": []})
            await send({"type": "http.response.body", "body": f"proxy: {e}".encode()})
            return

        # The client may hang up on a stream that never ends (a GET event stream): stop
        # reading upstream then too.
        async def hang_up():
            while (await receive())["type"] != "http.disconnect":
                pass
            await response.aclose()

        watcher = asyncio.create_task(hang_up())
        try:
            await send({
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP],
            })
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except (httpx.HTTPError, OSError, RuntimeError):
            pass  # either side went away
        finally:
            watcher.cancel()
            await response.aclose()

    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="toolshed's base URL, e.g. http://127.0.0.1:8123")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    args = parser.parse_args()
    token = os.environ.get("CONFORMANCE_TOKEN") or sys.exit("proxy: CONFORMANCE_TOKEN is not set")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = make_app(args.upstream, token, port)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    print(f"proxy listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
