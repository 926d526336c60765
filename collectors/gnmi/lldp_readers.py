"""The gNMI collector's LLDP readers: one coroutine per target on the collector's event loop,
each on its target's session connection (:meth:`collectors.gnmi.session.GnmiSession.connection`:
no second connection per target, no connect of its own; when the session reconnects, the reader
follows it to the new connection).

How a target is read is its profile's ``lldp.rpc`` (``docs/telemetry-dialects.md``, "LLDP"):

* ``on_change`` (the default): one STREAM ON_CHANGE subscription kept open
  (:mod:`collectors.gnmi.lldp_stream`); a report when the table changes, within ``coalesce_s``
  of the device's seconds. A stream that fails or ends is subscribed again after a short backoff
  (at most one LLDP interval); its fresh sync replaces the table;
* ``get`` / ``once`` (targets that serve no ON_CHANGE for LLDP): a read every ``interval_s`` of
  the device's clock, on a fixed grid spread over the interval by a hash of the target's name.

A switch's LLDP table and port states rarely change between two reads, and decoding a reply
(hundreds of leaves, a JSON value each) cost a collector more than streaming its counters. A
periodic reader keeps a digest of its last reply's content (the notifications with their
timestamps cleared, serialized deterministically): a reply with the same digest is the same
report at the new time, and only a reply that differs is decoded. A digest that differs for
another reason (a target that orders its updates differently) only costs a decode.
"""

from __future__ import annotations

import asyncio
import logging
import math
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.lldp import content_digest, decode_report, fetch, stamp
from collectors.gnmi.lldp_stream import Deliver, LldpStream
from collectors.profile import GnmiProfile
from pipeline.inventory import Target
from pipeline.retry import Backoff, RetryPolicy
from pipeline.topology.neighbors import NeighborReport

log = logging.getLogger("rocewatch.collectors.gnmi.lldp")

ON_CHANGE = "on_change"


#: a target's connection and credentials once its session has one (None: the collector stopped)
Connection = Callable[[asyncio.Event], Awaitable[tuple[grpc.aio.Channel, Any] | None]]


class _Reader:
    __slots__ = ("connection", "digest", "errors", "last", "last_error", "profile", "reports",
                 "reused", "stream", "target")

    def __init__(self, target: Target, profile: GnmiProfile, connection: Connection,
                 coalesce_s: float) -> None:
        self.target = target
        self.profile = profile
        self.connection = connection
        self.reports = 0
        #: reports whose reply said what the last one did (restamped, not decoded again)
        self.reused = 0
        self.errors = 0
        self.last_error = ""
        self.digest = b""
        self.last: NeighborReport | None = None
        self.stream = (LldpStream(target.name, profile, coalesce_s / target.clock_rate)
                       if profile.lldp.rpc == ON_CHANGE else None)

    def report(self, notes: list[pb.Notification]) -> NeighborReport:
        """The report of a periodic reply: the last one restamped when the reply's content is
        the same, else decoded."""
        ts = stamp(notes)
        digest = content_digest(notes)
        if self.last is not None and digest == self.digest:
            self.reused += 1
            return self.last.model_copy(update={"ts_ns": ts})
        report = decode_report(self.target.name, self.profile, ts, notes)
        self.digest, self.last = digest, report
        return report

    def failed(self, exc: BaseException) -> None:
        self.errors += 1
        detail = f"{type(exc).__name__}: {exc}"
        if detail != self.last_error:
            log.warning("LLDP read of %s failed: %s", self.target.name, detail)
        self.last_error = detail


class LldpReaders:
    """Every gNMI target's LLDP reader, run on the collector's event loop."""

    def __init__(self, targets: list[tuple[Target, GnmiProfile, Connection]],
                 interval_s: float, timeout_s: float = 10.0, coalesce_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.readers = [_Reader(t, p, c, coalesce_s) for t, p, c in targets
                        if interval_s > 0 and p.lldp.dialect != "none"]

    def start(self, stopping: asyncio.Event, deliver: Deliver) -> list[asyncio.Task[None]]:
        return [asyncio.ensure_future(self._follow(r, stopping, deliver) if r.stream is not None
                                      else self._poll(r, stopping, deliver))
                for r in self.readers]

    async def _follow(self, r: _Reader, stopping: asyncio.Event, deliver: Deliver) -> None:
        """Keep ``r``'s ON_CHANGE subscription open until the collector stops."""
        stream = r.stream
        assert stream is not None
        wall = self.interval_s / r.target.clock_rate
        backoff = Backoff(RetryPolicy(initial_s=min(0.5, wall / 10), cap_s=wall))

        async def counted(report: NeighborReport) -> None:
            r.reports += 1
            r.last_error = ""
            await deliver(report)

        try:
            while not stopping.is_set():
                syncs = stream.syncs
                try:
                    up = await r.connection(stopping)
                    if up is None:
                        return
                    await stream.follow(*up, stopping, counted)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # one target's failure stays its own
                    r.failed(exc)
                    if stream.syncs > syncs:
                        backoff.succeed()   # it ran: a restart is not a failure streak
                    snapshot = stream.lost()
                    if snapshot is not None:
                        await counted(snapshot)
                delay = backoff.fail()
                try:
                    await asyncio.wait_for(stopping.wait(), timeout=delay or wall)
                    return
                except TimeoutError:
                    pass
        finally:
            stream.close()

    async def _poll(self, r: _Reader, stopping: asyncio.Event, deliver: Deliver) -> None:
        """Read ``r`` every LLDP interval on a fixed grid until the collector stops."""
        wall = self.interval_s / r.target.clock_rate
        loop = asyncio.get_running_loop()
        # a fixed grid: a slow read delays its own report, never the ones after it
        due = loop.time() + (zlib.crc32(r.target.name.encode()) % 1000) / 1000 * wall
        while not stopping.is_set():
            try:
                await asyncio.wait_for(stopping.wait(), timeout=max(0.0, due - loop.time()))
                return
            except TimeoutError:
                pass
            due += wall * max(1, math.ceil((loop.time() - due) / wall))
            try:
                up = await r.connection(stopping)
                if up is None:
                    return
                channel, secrets = up
                report = r.report(await fetch(channel, r.profile, secrets, self.timeout_s))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one target's failure stays its own
                r.failed(exc)
                continue
            r.reports += 1
            r.last_error = ""
            await deliver(report)

    def health(self) -> dict[str, Any]:
        streams = [r.stream for r in self.readers if r.stream is not None]
        return {"interval_s": self.interval_s, "targets": len(self.readers),
                "streamed": len(streams),
                "reports": sum(r.reports for r in self.readers),
                "reused": sum(r.reused for r in self.readers),
                "syncs": sum(s.syncs for s in streams),
                "changes": sum(s.changes for s in streams),
                "errors": sum(r.errors for r in self.readers),
                "failing": sorted(r.target.name for r in self.readers if r.last_error)}
