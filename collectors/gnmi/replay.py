"""Recorded gNMI streams served back on the device's schedule, by many targets in one process.

:func:`collectors.gnmi.recording.serve` plays a recording as fast as a client reads (the decode
path's ceiling). A :class:`PacedReplay` plays it the way the device did: on a Subscribe, the
initial notifications of the matching stream (same ``prefix.target`` and origin), then
``sync_response``, then one recorded interval every ``interval_s``, looping over the recorded
intervals, every notification stamped with the current wall time on the stream's own schedule
(start + k x interval, as a SAMPLE subscription is). One grpc.aio server listens on as many ports
as there are targets, so a thousand targets cost one process and one event loop: the peer the
collector's targets-per-process curve is measured against (``rocewatch bench collect --part
gnmi-scale``), and the target of the tests that restart streams (``lifetime_s`` ends every
stream after that long, as some devices do).

Counters loop with the recording (a fall at each loop, which the rate rule reads as a reset);
nothing else about the stream changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.recording import Recording, gnmi_service
from collectors.gnmi.subscription import subscribe_requests
from collectors.profile import GnmiProfile, load_profile
from pipeline.errors import CollectorError

_SYNC = pb.SubscribeResponse(sync_response=True).SerializeToString()


@dataclass
class _Stream:
    """One recorded stream (a prefix target and origin): its initial set and its intervals."""

    initial: list[pb.SubscribeResponse] = field(default_factory=list)
    intervals: list[list[pb.SubscribeResponse]] = field(default_factory=list)


def _key(path: pb.Path) -> tuple[str, str]:
    return path.target, path.origin


def _signature(request: pb.SubscribeRequest) -> tuple[str, str, tuple[bytes, ...]]:
    sl = request.subscribe
    return (*_key(sl.prefix), tuple(sorted(s.path.SerializeToString() for s in sl.subscription)))


def split_streams(recording: Recording) -> dict[tuple[str, str], _Stream]:
    """A recording's messages by stream: before its ``sync_response`` the initial set, after it
    one group per notification timestamp (one recorded interval)."""
    streams: dict[tuple[str, str], _Stream] = {}
    synced: set[tuple[str, str]] = set()
    last: tuple[str, str] | None = None
    stamps: dict[tuple[str, str], int] = {}
    for data in recording.messages:
        resp = pb.SubscribeResponse.FromString(data)
        which = resp.WhichOneof("response")
        if which == "sync_response":
            if last is not None:
                synced.add(last)
            continue
        if which != "update":
            continue
        key = _key(resp.update.prefix)
        last = key
        stream = streams.setdefault(key, _Stream())
        if key not in synced:
            stream.initial.append(resp)
        elif stamps.get(key) != resp.update.timestamp or not stream.intervals:
            stream.intervals.append([resp])
        else:
            stream.intervals[-1].append(resp)
        stamps[key] = resp.update.timestamp
    return streams


class PacedReplay:
    """Targets on ``ports`` loopback ports; target ``i`` is given profile ``recordings[i % n]``'s
    and is answered with the recording of the profile its requests come from."""

    def __init__(self, recordings: Sequence[Recording], ports: int, interval_s: float,
                 lifetime_s: float = 0.0, host: str = "127.0.0.1") -> None:
        if not recordings or ports < 1 or interval_s <= 0:
            raise CollectorError("a paced replay needs recordings, ports and an interval")
        self.recordings = list(recordings)
        self.streams = [split_streams(r) for r in self.recordings]
        self._by_request: dict[tuple[str, str, tuple[bytes, ...]], int] = {}
        for i, rec in enumerate(self.recordings):
            profile = load_profile(rec.profile)
            if isinstance(profile, GnmiProfile):
                for req in subscribe_requests(profile, interval_s, profile.encoding):
                    self._by_request.setdefault(_signature(req), i)
        self.count = ports
        self.interval_ns = int(interval_s * 1e9)
        self.lifetime_s = lifetime_s
        self.host = host
        self.ports: list[int] = []
        self.subscribes = 0
        self.sent = 0
        #: monotonic arrival time of every Capabilities (one per connection: how a fabric-wide
        #: reconnect arrives)
        self.arrivals: list[float] = []
        self._dropped = asyncio.Event()
        self._server: Any = None

    def targets(self) -> list[dict[str, str]]:
        """One target per port: name, address, profile (the targets file's shape)."""
        return [{"name": f"{self.recordings[i % len(self.recordings)].profile}-{i}",
                 "address": f"{self.host}:{port}",
                 "profile": self.recordings[i % len(self.recordings)].profile}
                for i, port in enumerate(self.ports)]

    async def start(self) -> PacedReplay:
        # one completion queue, many listening sockets: the replay's cost grows with the
        # messages it sends, not with the targets it plays
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers((gnmi_service(self._capabilities, self._subscribe),))
        for i in range(self.count):
            port = server.add_insecure_port(f"{self.host}:0")
            if not port:
                raise CollectorError(f"the replay could not bind port {i + 1} of {self.count}")
            self.ports.append(port)
        await server.start()
        self._server = server
        return self

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=0.2)
            self._server = None

    def drop_all(self) -> None:
        """End every open stream now (UNAVAILABLE), as a fabric-wide outage would; the ports keep
        listening, so the collector comes back at once if nothing holds it back."""
        self._dropped.set()
        self._dropped = asyncio.Event()

    async def _pause(self, seconds: float, dropped: asyncio.Event) -> bool:
        """Sleep; True when the streams were dropped meanwhile."""
        if dropped.is_set():
            return True
        try:
            await asyncio.wait_for(dropped.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            return False
        return True

    async def _capabilities(self, request: pb.CapabilityRequest,
                            context: Any) -> pb.CapabilityResponse:
        self.arrivals.append(time.monotonic())
        return pb.CapabilityResponse(supported_encodings=[pb.JSON_IETF, pb.PROTO, pb.JSON],
                                     gNMI_version="0.8.0")

    def _stream_for(self, request: pb.SubscribeRequest) -> _Stream | None:
        # a target is told apart by what it is asked for: each profile subscribes to its own
        # paths (the server cannot see which of its ports the client dialled)
        index = self._by_request.get(_signature(request))
        if index is None:
            return None
        return self.streams[index].get(_key(request.subscribe.prefix))

    async def _subscribe(self, requests: AsyncIterator[pb.SubscribeRequest],
                         context: Any) -> AsyncIterator[bytes]:
        request = await requests.__anext__()
        self.subscribes += 1
        dropped = self._dropped
        stream = self._stream_for(request)
        start = time.time_ns()
        ends = time.monotonic() + (self.lifetime_s if self.lifetime_s > 0 else 1e9)
        if stream is not None:
            for resp in stream.initial:
                resp.update.timestamp = start
                yield resp.SerializeToString()
        yield _SYNC
        if stream is None or not stream.intervals:
            if await self._pause(ends - time.monotonic(), dropped):
                await context.abort(grpc.StatusCode.UNAVAILABLE, "dropped")
            return
        k = 1
        while True:
            due = start + k * self.interval_ns
            wait = (due - time.time_ns()) / 1e9
            if time.monotonic() + max(wait, 0.0) >= ends:
                if await self._pause(ends - time.monotonic(), dropped):
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "dropped")
                return
            if await self._pause(wait, dropped):
                await context.abort(grpc.StatusCode.UNAVAILABLE, "dropped")
            for resp in stream.intervals[(k - 1) % len(stream.intervals)]:
                resp.update.timestamp = due
                self.sent += 1
                yield resp.SerializeToString()
            k += 1
