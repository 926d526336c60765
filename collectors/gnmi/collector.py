"""The gNMI collector: one process, thousands of targets, one event loop.

``run`` owns an asyncio loop in the calling thread (grpc's asyncio API, ``grpc.aio``). Each target
is a :class:`~collectors.gnmi.session.GnmiSession` coroutine (STREAM subscriptions: SAMPLE for
counters, ON_CHANGE for status) feeding a :class:`~collectors.gnmi.decode.GnmiDecoder`; no thread
per target, so a target costs its channel, its decoder's state and a few small objects (measured
in ``docs/benchmarks.md``). Sessions open through one :class:`~collectors.gnmi.connects.ConnectGate`
(``connect_rate`` per second, ``max_connecting`` at once), so starting up or coming back from a
fabric-wide outage is spread rather than a storm.

One ticker coroutine owns everything that leaves the collector: every ``flush_interval_s`` (at
most half the shortest sample interval) it takes each target's decoded rows as one per-device
batch, with the target's health samples of the intervals that ended (:mod:`collectors.health`),
tears down streams that went silent, and hands the batches to ``emit`` on a thread of its own, so
a slow bus holds the ticker back (and through it, the decoders' bounded buffers and gRPC's flow
control, the targets) without stopping the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import Field

from collectors.base import Collector, CollectorOptions, Emit, load_targets, summarize
from collectors.clocks import HOLD_MIN_S, DeviceClock, FabricClock
from collectors.gnmi.connects import ConnectGate
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.lldp_readers import LldpReaders
from collectors.gnmi.mapping import PathMapper
from collectors.gnmi.scan import warm
from collectors.gnmi.session import GnmiSession, SessionOptions
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, load_profile
from pipeline.errors import ConfigError
from pipeline.model import BatchBuilder, SampleBatch
from pipeline.retry import RetryPolicy

log = logging.getLogger("rocewatch.collectors.gnmi")


class GnmiOptions(CollectorOptions):
    #: how often decoded rows are handed on (wall seconds)
    flush_interval_s: float = Field(0.5, gt=0, le=60)
    connect_timeout_s: float = Field(5.0, gt=0)
    backoff_initial_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)
    #: a stream silent for this many sample intervals is reopened, but not before idle_min_s
    idle_intervals: float = Field(10.0, gt=1)
    idle_min_s: float = Field(10.0, ge=0)
    #: gRPC keepalive pings (0 = off; some targets refuse frequent pings)
    keepalive_s: float = Field(0.0, ge=0)
    #: new connects per second, for the whole collector (after a burst of connect_burst)
    connect_rate: float = Field(200.0, gt=0)
    connect_burst: int = Field(50, ge=1)
    #: connects in progress at once
    max_connecting: int = Field(64, ge=1)
    #: decoded rows a target may hold before its session stops reading (bounded memory)
    max_buffered_samples: int = Field(200_000, ge=1000)
    #: LLDP changes a target streams (ON_CHANGE) within this many of its seconds go out as one
    #: report
    lldp_coalesce_s: float = Field(0.5, ge=0, le=10)


class _Target:
    __slots__ = ("decoder", "health", "session")

    def __init__(self, health: TargetHealth, decoder: GnmiDecoder, session: GnmiSession) -> None:
        self.health = health
        self.decoder = decoder
        self.session = session


class GnmiCollector(Collector):
    """gNMI STREAM subscriber for every gNMI target of the inventory."""

    name = "gnmi"
    Options = GnmiOptions

    def __init__(self, instance: str, options: GnmiOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        self.opts = options
        targets, env = load_targets(options, "gnmi")
        self.tally = ErrorTally(f"gnmi collector {instance}")
        slowest = max((t.sample_interval_s / t.clock_rate for t in targets), default=1.0)
        self.fabric = FabricClock(hold_s=max(1.5 * slowest, HOLD_MIN_S),
                                  rate=max((t.clock_rate for t in targets), default=1.0))
        self.gate = ConnectGate(options.connect_rate, options.connect_burst,
                                options.max_connecting)
        session_options = SessionOptions(
            connect_timeout_s=options.connect_timeout_s,
            reconnect=RetryPolicy(initial_s=options.backoff_initial_s,
                                  cap_s=max(options.backoff_max_s, options.backoff_initial_s)),
            idle_intervals=options.idle_intervals, idle_min_s=options.idle_min_s,
            keepalive_s=options.keepalive_s, max_buffered=options.max_buffered_samples)
        mappers: dict[str, PathMapper] = {}
        self.targets: dict[str, _Target] = {}
        for target in targets:
            profile = load_profile(target.profile, options.profile_dirs)
            if not isinstance(profile, GnmiProfile):
                raise ConfigError(f"target {target.name}: profile {target.profile} is not gNMI")
            mapper = mappers.get(target.profile)
            if mapper is None:
                mapper = mappers[target.profile] = PathMapper(profile)
            health = TargetHealth(target.name, "gnmi", target.address, target.profile,
                                  target.sample_interval_s, DeviceClock(target.clock_rate),
                                  self.fabric, stale_intervals=options.stale_intervals)
            decoder = GnmiDecoder(target.name, mapper, health, self.tally)
            session = GnmiSession(target, profile, decoder, health, self.tally, env,
                                  session_options, self.gate)
            self.targets[target.name] = _Target(health, decoder, session)
        if not self.targets:
            log.warning("gnmi collector %s has no gNMI targets", instance)
        warm()
        self.lldp = LldpReaders([(t.session.target, t.session.profile, t.session.connection)
                                 for t in self.targets.values()],
                                options.lldp_interval_s, coalesce_s=options.lldp_coalesce_s)

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        emitter = ThreadPoolExecutor(1, thread_name_prefix=f"gnmi-{self.instance}-emit")
        try:
            loop.run_until_complete(self._main(stop, emitter))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            emitter.shutdown(wait=True)

    async def _main(self, stop: threading.Event, emitter: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        waker = threading.Thread(target=lambda: (stop.wait(), loop.call_soon_threadsafe(
            stopping.set)), daemon=True, name=f"gnmi-{self.instance}-stop")
        waker.start()
        sessions = [asyncio.ensure_future(t.session.run(stopping))
                    for t in self.targets.values()]
        if self.emit_neighbors is not None:  # LLDP reports on the emitter's thread, like rows
            send = self.emit_neighbors
            sessions += self.lldp.start(stopping, lambda r: loop.run_in_executor(emitter, send, r))
        self.started.set()
        try:
            await self._tick_until(stopping, emitter)
        finally:
            stopping.set()
            done, pending = await asyncio.wait(sessions, timeout=10.0) if sessions else (
                set(), set())
            for task in pending:
                task.cancel()
            await asyncio.gather(*sessions, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.warning("gnmi session ended with %r", task.exception())
            batches = self.flush(time.monotonic(), health=False)
            if batches:
                await loop.run_in_executor(emitter, self._emit_all, batches)
            waker.join(1.0)

    async def _tick_until(self, stopping: asyncio.Event, emitter: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        intervals = [t.health.interval_wall for t in self.targets.values()]
        tick = max(min([self.opts.flush_interval_s, *(i / 4 for i in intervals)]), 0.01)
        # rows go out at least twice per sample interval: a batch per device and interval,
        # never several intervals of a fast (simulated) clock held back in one
        flush = max(min([self.opts.flush_interval_s, *(i / 2 for i in intervals)]), tick)
        next_tick = next_data = time.monotonic()
        while not stopping.is_set():
            try:
                await asyncio.wait_for(stopping.wait(),
                                       timeout=max(0.0, next_tick - time.monotonic()))
                return
            except TimeoutError:
                pass
            now = time.monotonic()
            next_tick = max(next_tick + tick, now)  # a slow emit: do not try to catch up
            data = now >= next_data
            if data:
                next_data = max(next_data + flush, now)
            batches = self.flush(now, data=data)
            if batches:
                await loop.run_in_executor(emitter, self._emit_all, batches)

    def _emit_all(self, batches: Sequence[SampleBatch]) -> None:
        for batch in batches:
            self.emit(batch)

    def flush(self, wall: float, data: bool = True, health: bool = True) -> list[SampleBatch]:
        """Each target's decoded rows, then its health samples of the intervals that ended."""
        out: list[SampleBatch] = []
        for t in self.targets.values():
            if health:
                t.health.tick(wall)
                t.session.check_idle(wall)
            closed = bool(t.health.pending_intervals)
            # a health sample reports the expected count of the rows before it
            if data or closed or t.decoder.pending > self.opts.max_buffered_samples:
                batch = t.decoder.take()
                t.session.taken()
                if batch is not None:
                    out.append(batch)
            if health and closed:
                builder = BatchBuilder()
                t.health.drain(builder)
                out.append(builder.build())
        return out

    def health(self) -> dict[str, Any]:
        wall = time.monotonic()
        return summarize("gnmi", self.instance,
                         {name: t.health.snapshot(wall) for name, t in self.targets.items()},
                         connects_granted=self.gate.granted, lldp=self.lldp.health())
