"""The gNMI collector: one process, many targets, each kept subscribed by its own session.

Each target gets a :class:`~collectors.gnmi.session.GnmiSession` thread (STREAM subscriptions:
SAMPLE for counters, ON_CHANGE for status) feeding a :class:`~collectors.gnmi.decode.GnmiDecoder`.
One ticker thread owns everything that leaves the collector: every ``flush_interval_s`` it takes
each target's decoded rows as one per-device batch, emits the targets' health samples once per
sample interval (device time), and tears down streams that went silent.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from pydantic import Field

from collectors.base import Collector, CollectorOptions, Emit, load_targets, summarize
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import PathMapper
from collectors.gnmi.session import GnmiSession, SessionOptions
from collectors.health import DeviceClock, ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, load_profile
from pipeline.errors import ConfigError
from pipeline.model import BatchBuilder
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


class _Target:
    __slots__ = ("decoder", "health", "session", "thread")

    def __init__(self, health: TargetHealth, decoder: GnmiDecoder, session: GnmiSession) -> None:
        self.health = health
        self.decoder = decoder
        self.session = session
        self.thread: threading.Thread | None = None


class GnmiCollector(Collector):
    """gNMI STREAM subscriber for every gNMI target of the inventory."""

    name = "gnmi"
    Options = GnmiOptions

    def __init__(self, instance: str, options: GnmiOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        self.opts = options
        targets, env = load_targets(options, "gnmi")
        self.tally = ErrorTally(f"gnmi collector {instance}")
        self.clock = DeviceClock()
        session_options = SessionOptions(
            connect_timeout_s=options.connect_timeout_s,
            reconnect=RetryPolicy(initial_s=options.backoff_initial_s,
                                  cap_s=options.backoff_max_s),
            idle_intervals=options.idle_intervals, idle_min_s=options.idle_min_s,
            keepalive_s=options.keepalive_s)
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
                                  target.sample_interval_s,
                                  DeviceClock(target.clock_rate, fallback=self.clock),
                                  stale_intervals=options.stale_intervals)
            decoder = GnmiDecoder(target.name, mapper, health, self.tally)
            session = GnmiSession(target, profile, decoder, health, self.tally, env,
                                  session_options)
            self.targets[target.name] = _Target(health, decoder, session)
        if not self.targets:
            log.warning("gnmi collector %s has no gNMI targets", instance)

    def run(self, stop: threading.Event) -> None:
        for name, t in self.targets.items():
            t.thread = threading.Thread(target=t.session.run, args=(stop,), daemon=True,
                                        name=f"gnmi-{name}")
            t.thread.start()
        self.started.set()
        try:
            self._tick_until(stop)
        finally:
            for t in self.targets.values():
                t.session.close()
            for t in self.targets.values():
                if t.thread is not None:
                    t.thread.join(10.0)
                    if t.thread.is_alive():
                        log.warning("gnmi session %s did not stop", t.health.name)
            self.flush(time.monotonic(), health=False)

    def _tick_until(self, stop: threading.Event) -> None:
        intervals = [t.health.interval_wall for t in self.targets.values()]
        tick = min([self.opts.flush_interval_s, *(i / 4 for i in intervals)])
        tick = max(tick, 0.01)
        next_tick = next_data = time.monotonic()
        while not stop.wait(max(0.0, next_tick - time.monotonic())):
            now = time.monotonic()
            next_tick = max(next_tick + tick, now)  # a slow emit: do not try to catch up
            data = now >= next_data
            if data:
                next_data = max(next_data + self.opts.flush_interval_s, now)
            self.flush(now, data=data)

    def flush(self, wall: float, data: bool = True, health: bool = True) -> None:
        """Emit each target's decoded rows, then the health of targets whose interval ended."""
        for t in self.targets.values():
            due = health and t.health.due(wall)
            if data or due:  # a health sample reports the expected count of the rows before it
                batch = t.decoder.take()
                if batch is not None:
                    self.emit(batch)
            if not health:
                continue
            t.session.check_idle(wall)
            if due:
                builder = BatchBuilder()
                t.health.tick(builder, wall)
                self.emit(builder.build())

    def health(self) -> dict[str, Any]:
        wall = time.monotonic()
        return summarize("gnmi", self.instance,
                         {name: t.health.snapshot(wall) for name, t in self.targets.items()})
