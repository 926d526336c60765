"""A scripted gNMI target: a real gRPC gNMI server on loopback that sends whatever bytes a test
scripts (including malformed ones), for the bad-input and session cases the lab's honest switches
never produce; and the notifications tests script with."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.recording import gnmi_service

Script = Callable[[pb.SubscribeRequest, "ScriptedTarget"], Iterator[bytes]]


@dataclass
class ScriptedTarget:
    """A gNMI server on 127.0.0.1 whose Subscribe replies are scripted raw bytes."""

    script: Script
    tls: tuple[bytes, bytes, bytes | None] | None = None  # (cert, key, client CA for mTLS)
    username: str = "admin"
    password: str = "admin"
    encodings: tuple[int, ...] = (pb.JSON_IETF, pb.PROTO)
    port: int = 0
    requests: list[pb.SubscribeRequest] = field(default_factory=list)
    subscribes: int = 0
    peers: list[str] = field(default_factory=list)
    _server: Any = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _check(self, context: grpc.ServicerContext) -> None:
        md = dict(context.invocation_metadata())
        if md.get("username") != self.username or md.get("password") != self.password:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad username or password")

    def _capabilities(self, request: pb.CapabilityRequest,
                      context: grpc.ServicerContext) -> pb.CapabilityResponse:
        self._check(context)
        return pb.CapabilityResponse(supported_encodings=list(self.encodings),
                                     gNMI_version="0.8.0")

    def _subscribe(self, requests: Iterator[pb.SubscribeRequest],
                   context: grpc.ServicerContext) -> Iterator[bytes]:
        self._check(context)
        request = next(requests)
        self.requests.append(request)
        self.subscribes += 1
        self.peers.append(context.peer())
        for data in self.script(request, self):
            if not context.is_active():
                return
            yield data

    def start(self) -> ScriptedTarget:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((gnmi_service(self._capabilities, self._subscribe),))
        bind = f"127.0.0.1:{self.port}"
        if self.tls is None:
            self.port = server.add_insecure_port(bind)
        else:
            cert, key, client_ca = self.tls
            creds = grpc.ssl_server_credentials([(key, cert)], root_certificates=client_ca,
                                                require_client_auth=client_ca is not None)
            self.port = server.add_secure_port(bind, creds)
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None


def notification(ts: int, updates: list[tuple[str, pb.TypedValue]], origin: str = "openconfig",
                 prefix: str = "", target: str = "", deletes: tuple[str, ...] = ()) -> bytes:
    """A serialized SubscribeResponse with one notification (paths in text form)."""
    from collectors.gnmi.subscription import parse_path

    n = pb.Notification(timestamp=ts, prefix=parse_path(prefix, origin=origin, target=target))
    for path, value in updates:
        n.update.add(path=parse_path(path), val=value)
    for path in deletes:
        n.delete.append(parse_path(path))
    return pb.SubscribeResponse(update=n).SerializeToString()


SYNC = pb.SubscribeResponse(sync_response=True).SerializeToString()


def hold(target: ScriptedTarget, released: threading.Event | None = None) -> Iterator[bytes]:
    """Keep a stream open without sending (until released or the server stops)."""
    while not (released and released.is_set()) and target._server is not None:
        time.sleep(0.05)
    return
    yield b""


class ReplayThread:
    """A :class:`collectors.gnmi.replay.PacedReplay` on an event loop of its own thread."""

    def __init__(self, replay: Any) -> None:
        import asyncio

        self.replay = replay
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def _call(self, coro: Any) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def start(self) -> ReplayThread:
        self._thread.start()
        self._call(self.replay.start())
        return self

    def drop_all(self) -> float:
        """End every stream now; returns the monotonic time of the drop."""
        at = time.monotonic()
        self.loop.call_soon_threadsafe(self.replay.drop_all)
        return at

    def stop(self) -> None:
        self._call(self.replay.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
