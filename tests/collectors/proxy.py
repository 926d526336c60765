"""A TCP proxy on loopback in front of one device agent: the network faults a test injects into a
real session. ``freeze`` stops forwarding both ways while every connection stays open (a hung
device or a black-holed path); ``kill`` closes every connection and refuses new ones (the agent
died); ``resume`` undoes either."""

from __future__ import annotations

import asyncio
import contextlib
import threading


class Proxy:
    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._flowing = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.accepted = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _call(self, coro: object) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)  # type: ignore[arg-type]

    def start(self) -> Proxy:
        self._thread.start()
        self._call(self._listen())
        self.loop.call_soon_threadsafe(self._flowing.set)
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port or 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer),
                             return_exceptions=True)
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await self._flowing.wait()
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    def freeze(self) -> None:
        self.loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        if self._server is None:
            self._call(self._listen())
        self.loop.call_soon_threadsafe(self._flowing.set)

    def kill(self) -> None:
        async def down() -> None:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()
                self._server = None
            for w in list(self._writers):
                w.close()
        self._call(down())

    def stop(self) -> None:
        self.kill()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
