"""The agents' event loop: every device agent and the TE controller, on one asyncio thread.

One loop hosts all gNMI servers (grpc.aio), all SNMP engines (pysnmp asyncio) and the TE
controller (uvicorn), plus the snapshot poller that feeds them. Keeping them on one thread means one
snapshot copy per tick and no lock contention between agents; the simulation itself runs in another
process. Everything binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

import grpc
from pygnmi.spec.v080 import gnmi_pb2_grpc as pb_grpc

from lab.gnmi.target import GnmiTarget
from lab.tls import LabPki
from pipeline.errors import LabError

T = TypeVar("T")
HOST = "127.0.0.1"


class AgentHost:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="lab-agents", daemon=True)
        self._servers: list[grpc.aio.Server] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._closers: list[Any] = []
        self.gnmi_targets: dict[str, GnmiTarget] = {}
        self._started = False

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()
        self._started = True

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run a coroutine on the agents' loop and wait for its result."""
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def spawn(self, coro: Awaitable[Any]) -> None:
        async def _start() -> None:
            self._tasks.append(asyncio.ensure_future(coro))
        self.call(_start())

    def add_closer(self, closer: Any) -> None:
        """An async callable run at shutdown (SNMP engines, the TE server)."""
        self._closers.append(closer)

    async def start_gnmi(self, name: str, target: GnmiTarget, port: int,
                         pki: LabPki | None, mutual: bool) -> int:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        pb_grpc.add_gNMIServicer_to_server(target, server)
        address = f"{HOST}:{port}"
        if pki is None:
            bound = server.add_insecure_port(address)
        else:
            creds = grpc.ssl_server_credentials(
                [(pki.server_key.read_bytes(), pki.server_cert.read_bytes())],
                root_certificates=pki.ca.read_bytes() if mutual else None,
                require_client_auth=mutual)
            bound = server.add_secure_port(address, creds)
        if not bound:
            raise LabError(f"cannot bind the gNMI target of {name} to {address}")
        await server.start()
        self._servers.append(server)
        self.gnmi_targets[name] = target
        return int(bound)

    def stop(self) -> None:
        if not self._started:
            return
        try:
            self.call(self._shutdown(), timeout=15.0)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10.0)
            if not self.loop.is_running():
                self.loop.close()
            self._started = False
            self.gnmi_targets.clear()
            gc.collect()

    async def _shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(s.stop(grace=0.2) for s in self._servers),
                             return_exceptions=True)
        # dropping the last aio server lets grpc stop its poller thread
        self._servers.clear()
        for closer in self._closers:
            # shutdown must finish whatever one agent does
            with contextlib.suppress(Exception):
                await closer()
        # let grpc's and uvicorn's own callbacks finish before the loop stops
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
