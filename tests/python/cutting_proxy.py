"""A TCP proxy that cuts a connection when the server sends a chosen byte pattern.

The bytes before the pattern reach the client; then both sides are closed, as a network drop
would do. Every request head that passes is recorded, to show what the client did.
"""

import asyncio
import re

REQUEST_HEAD = re.compile(rb"((?:GET|POST|DELETE) /\S* HTTP/1\.[01]\r\n(?:[^\r\n]+\r\n)*)\r\n")


class CuttingProxy:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self.armed: bytes | None = None
        self.cuts = 0
        self.requests: list[str] = []
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    def cut_when_server_sends(self, pattern: bytes) -> None:
        self.armed = pattern

    def resumes(self) -> list[str]:
        return [r for r in self.requests if r.startswith("GET") and "last-event-id:" in r.lower()]

    async def close(self) -> None:
        for w in list(self._writers):
            w.close()
        if self._server:
            self._server.close()

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection(*self.upstream)
        self._writers.update([client_w, up_w])

        async def upstream_to_client() -> None:
            while chunk := await up_r.read(65536):
                at = chunk.find(self.armed) if self.armed else -1
                if at >= 0:
                    self.armed = None
                    self.cuts += 1
                    client_w.write(chunk[:at])
                    await client_w.drain()
                    break
                client_w.write(chunk)
                await client_w.drain()

        async def client_to_upstream() -> None:
            pending = b""
            while chunk := await client_r.read(65536):
                pending = (pending + chunk)[-65536:]
                for m in REQUEST_HEAD.finditer(pending):
                    self.requests.append(m.group(1).decode("latin-1"))
                end = pending.rfind(b"\r\n\r\n")
                if end >= 0:
                    pending = pending[end + 4 :]
                up_w.write(chunk)
                await up_w.drain()

        tasks = [asyncio.ensure_future(upstream_to_client()), asyncio.ensure_future(client_to_upstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except (asyncio.CancelledError, Exception):
            pass
        for t in tasks:
            t.cancel()
        for w in (client_w, up_w):
            w.close()
            self._writers.discard(w)
