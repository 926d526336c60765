"""What a collector knows about each target, and how it owns up to what it did not see.

:class:`TargetHealth` keeps one target's session state and counts; every sample interval (in the
device's time) it turns them into samples of the catalog's ``collector_*`` metrics (device = the
target's name, port ``""``), so a silent target shows up as ``collector_up = 0`` and
``collector_received = 0`` rather than as a gap that looks like calm.

:class:`ErrorTally` counts bad input per kind (malformed notification, wrong type, unknown path,
SNMP errors, ...) and logs the first of each kind once per collector: a stream of bad updates is
counted, never a flood of log lines.

:class:`DeviceClock` estimates a device's current time between samples (its last timestamp plus
the wall time since, at the device's clock rate), so health samples carry event time too.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pipeline.metrics import metric_id
from pipeline.model import BatchBuilder

log = logging.getLogger("rocewatch.collectors")

UP = metric_id("collector_up")
EXPECTED = metric_id("collector_expected")
RECEIVED = metric_id("collector_received")
ERRORS = metric_id("collector_errors")


class ErrorTally:
    """Bad input counted per kind; the first of each kind is logged, the rest only counted."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._logged: set[str] = set()
        self._lock = threading.Lock()

    def record(self, health: TargetHealth, kind: str, detail: str, n: int = 1) -> None:
        with self._lock:
            health.errors[kind] = health.errors.get(kind, 0) + n
            first = kind not in self._logged
            self._logged.add(kind)
        if first:
            log.warning("%s: %s from %s: %s (further %s errors are counted, not logged)",
                        self.owner, kind, health.name, detail, kind)


class DeviceClock:
    """Device time from the last (device ns, wall s) pair, advancing at ``rate``."""

    def __init__(self, rate: float = 1.0, fallback: DeviceClock | None = None) -> None:
        self.rate = rate
        self.fallback = fallback
        self._device_ns = 0
        self._wall = 0.0

    def observe(self, device_ns: int, wall: float) -> None:
        if device_ns > 0:
            self._device_ns, self._wall = device_ns, wall
            if self.fallback is not None:
                self.fallback.observe(device_ns, wall)

    @property
    def known(self) -> bool:
        return self._device_ns > 0

    def now_ns(self, wall: float | None = None) -> int:
        wall = time.monotonic() if wall is None else wall
        if self._device_ns:
            return self._device_ns + int((wall - self._wall) * self.rate * 1e9)
        if self.fallback is not None and self.fallback.known:
            return self.fallback.now_ns(wall)
        return time.time_ns()


@dataclass
class TargetHealth:
    """One target's session state and counts (written by its session, read by the ticker)."""

    name: str
    protocol: str
    address: str
    profile: str
    #: the target's sample interval in the device's seconds
    interval_s: float
    clock: DeviceClock
    #: how many silent intervals before a connected target counts as down
    stale_intervals: float = 3.0
    connected: bool = False
    synced: bool = False
    connects: int = 0
    last_error: str = ""
    #: "device" when sample times come from the device, "collector" when the device has no clock
    clock_source: str = "device"
    last_data_wall: float = 0.0
    samples_total: int = 0
    messages_total: int = 0
    deletes_total: int = 0
    expected: int = 0
    received_interval: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    updates_per_s: float = 0.0
    #: wall seconds a target may take to connect and send its first data before it is reported
    #: down (at least ``stale_intervals`` sample intervals): a collector starting up is not a
    #: fabric going silent
    connect_grace_s: float = 2.0
    _next_due_ns: int = 0
    _last_tick_wall: float = 0.0
    _first_due_wall: float = 0.0
    _last_reported: dict[str, float] = field(default_factory=dict)

    @property
    def interval_wall(self) -> float:
        return self.interval_s / self.clock.rate

    def note_data(self, samples: int, device_ns: int, wall: float) -> None:
        self.samples_total += samples
        self.received_interval += samples
        self.messages_total += 1
        self.last_data_wall = wall
        self.clock.observe(device_ns, wall)

    def is_up(self, wall: float) -> bool:
        if not self.connected or not self.last_data_wall:
            return False
        return wall - self.last_data_wall <= self.stale_intervals * self.interval_wall

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())

    def due(self, wall: float) -> bool:
        """True once per sample interval of device time."""
        now = self.clock.now_ns(wall)
        if not self._next_due_ns:
            self._next_due_ns = now + int(self.interval_s * 1e9)
            self._last_tick_wall = self._first_due_wall = wall
            return False
        return now >= self._next_due_ns

    def tick(self, builder: BatchBuilder, wall: float) -> None:
        """Append this interval's health samples and start the next interval."""
        now = self.clock.now_ns(wall)
        step = int(self.interval_s * 1e9)
        # a stalled collector skips intervals rather than replaying them
        self._next_due_ns = max(self._next_due_ns + step, now + step // 2)
        elapsed = max(wall - self._last_tick_wall, 1e-9)
        self._last_tick_wall = wall
        received, self.received_interval = self.received_interval, 0
        self.updates_per_s = received / elapsed
        grace = max(self.connect_grace_s, self.stale_intervals * self.interval_wall)
        if not self.last_data_wall and wall - self._first_due_wall < grace:
            return  # still connecting: neither up nor down yet
        up = self.is_up(wall)
        for metric, value in ((UP, 1.0 if up else 0.0), (EXPECTED, float(self.expected)),
                              (RECEIVED, float(received)), (ERRORS, float(self.error_total))):
            builder.add(now, self.name, "", metric, -1, value)
        self._last_reported = {"up": float(up), "received": float(received)}

    def snapshot(self, wall: float | None = None) -> dict[str, Any]:
        wall = time.monotonic() if wall is None else wall
        return {
            "protocol": self.protocol, "address": self.address, "profile": self.profile,
            "up": self.is_up(wall), "connected": self.connected, "synced": self.synced,
            "connects": self.connects, "last_error": self.last_error,
            "last_update_age_s": (wall - self.last_data_wall) if self.last_data_wall else None,
            "samples_total": self.samples_total, "messages_total": self.messages_total,
            "deletes_total": self.deletes_total, "updates_per_s": self.updates_per_s,
            "expected": self.expected,
            "received": self._last_reported.get("received", 0.0),
            "errors": dict(self.errors), "errors_total": self.error_total,
            "clock": self.clock_source, "interval_s": self.interval_s,
        }
