"""What a collector knows about each target, and how it owns up to what it did not see.

:class:`TargetHealth` keeps one target's session state and counts, and turns them into samples of
the catalog's ``collector_*`` metrics once per sample interval (device = the target's name, port
``""``), so a silent target shows up as ``collector_up = 0`` / ``collector_received = 0`` rather
than as a gap that looks like calm.

**Health intervals are the device's, judged by the device's own data.** ``collector_received`` is
the number of samples whose *timestamps* fall in an interval of the device's time, and an interval
is closed (its health sample emitted, stamped with the interval's end) when the device's data
shows it is over: a sample of a later interval arrives. Intervals are phased so the device's
samples sit in their middle (half an interval of timing noise either way changes nothing), and
are re-phased on the first sample of every new session (a restarted subscription keeps its own
schedule). So how late notifications arrive, how a lab keeps its schedule at ``--speed``, and how
the collector's threads are scheduled change nothing in what is counted: a device that delivered
every interval is never reported short (issue 10.1: counting by arrival against an estimate of
the device's clock that ran ahead of late data made most windows read ``received 0``).

Only silence is judged on a clock other than the target's own: an interval no data has closed is
closed once the collector's :class:`~collectors.clocks.FabricClock` (the newest time any target
showed) is past its end by a quarter of an interval plus the target's own usual lag behind that
clock (a decaying maximum), so a target whose data is always a little late is not called silent
for it, and a device that stopped is reported within its third interval.
Health samples never lead the devices' data in event time.

The target's state (:meth:`TargetHealth.state`): ``up``, ``connecting`` (never delivered yet),
``down`` (no session, or the session is silent), or ``no_mapped_data`` (it answers, but nothing it
sends maps onto the catalog: a profile that matches nothing; reported as not up).

:class:`ErrorTally` counts bad input per kind and logs the first of each kind once per collector.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from collectors.clocks import DeviceClock, FabricClock, wall_ns
from pipeline.metrics import metric_id
from pipeline.model import BatchBuilder

log = logging.getLogger("rocewatch.collectors")

UP = metric_id("collector_up")
EXPECTED = metric_id("collector_expected")
RECEIVED = metric_id("collector_received")
ERRORS = metric_id("collector_errors")

#: at most this many intervals are closed at once (a long outage reports its start, then moves on)
MAX_CLOSE = 8
#: quarters of an interval past an interval's end (beyond the target's usual lag) before silence
#: closes it: its sample, due in its middle, is then three quarters of an interval overdue
SILENCE_MARGIN = 1


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


@dataclass
class TargetHealth:
    """One target's session state, counts and health intervals (see the module docstring)."""

    name: str
    protocol: str
    address: str
    profile: str
    #: the target's sample interval in the device's seconds
    interval_s: float
    clock: DeviceClock
    fabric: FabricClock = field(default_factory=FabricClock)
    #: intervals of silence (beyond the usual lag) after which a connected target is not up
    stale_intervals: float = 3.0
    #: wall seconds a target may take to connect before it is reported down (at least
    #: ``stale_intervals`` intervals): a collector starting up is not a fabric going silent
    connect_grace_s: float = 2.0
    connected: bool = False
    synced: bool = False
    connects: int = 0
    last_error: str = ""
    #: "device" when sample times come from the device, "collector" when from the collector
    clock_source: str = "device"
    #: why the collector's clock is used, when it is ("" otherwise)
    clock_note: str = ""
    #: where port names come from ("" when the protocol names its ports itself)
    port_names: str = ""
    last_data_wall: float = 0.0
    samples_total: int = 0
    messages_total: int = 0
    deletes_total: int = 0
    expected: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    updates_per_s: float = 0.0
    _start_ns: int = 0
    _end_ns: int = 0
    _count: int = 0
    _rephase: bool = False
    _last_data_ns: int = 0
    _lag_ns: int = 0
    _closed: list[tuple[int, bool, int, int]] = field(default_factory=list)
    _last_received: int = 0
    _first_tick_wall: float = 0.0
    _rate_mark: tuple[float, int] = (0.0, 0)
    _answered_wall: float = 0.0
    _samples_at_connect: int = 0
    _messages_at_connect: int = 0

    def __post_init__(self) -> None:
        self.interval_ns = max(1, int(self.interval_s * 1e9))

    @property
    def interval_wall(self) -> float:
        return self.interval_s / self.clock.rate

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())

    # -- what the session tells ---------------------------------------------------------------

    def session_started(self, wall: float) -> None:
        """A session is up (a gNMI stream, or an SNMP poll answered after failures)."""
        self.connected, self.synced = True, False
        self.connects += 1
        self.last_error = ""
        self._rephase = True
        self._answered_wall = 0.0
        self._samples_at_connect = self.samples_total
        self._messages_at_connect = self.messages_total

    def session_ended(self) -> None:
        self.connected = False

    def note_message(self, wall: float) -> None:
        """The target answered (any message or poll), mapped or not."""
        self.messages_total += 1
        if not self._answered_wall:
            self._answered_wall = wall

    def note_data(self, samples: int, device_ns: int, wall: float, sampled: bool = True) -> None:
        """``samples`` mapped samples stamped ``device_ns`` arrived; ``sampled``: they come from a
        periodic source (SAMPLE subscription, a poll) and so show the device's clock moving."""
        self.samples_total += samples
        if samples:
            self.last_data_wall = wall
        self.clock.observe(device_ns, wall)
        if device_ns <= 0:
            return
        if sampled:
            if device_ns >= self._start_ns:
                # how far behind the freshest target this one's data arrives; a sample of an
                # interval silence already closed (held back by a stall, delivered in a burst)
                # is late, not the usual lag
                lag = max(0, self.fabric.newest_ns - device_ns)
                self._lag_ns = max(lag, self._lag_ns - self.interval_ns // 8)
            self.fabric.observe(device_ns, wall)
            if samples:  # fresh means mapped data arrives, not merely that the device answers
                self._last_data_ns = max(self._last_data_ns, device_ns)
        self._by_data(samples, device_ns, sampled)

    # -- intervals ----------------------------------------------------------------------------

    def _anchor(self, ts: int) -> None:
        half = self.interval_ns // 2
        self._start_ns, self._end_ns, self._count = ts - half, ts + half, 0

    def _close(self) -> None:
        up = self.connected and not self.no_mapped_data() and self._fresh(self._end_ns)
        self._closed.append((self._end_ns, up, self._count, self.error_total))
        self._last_received = self._count
        self._start_ns, self._end_ns = self._end_ns, self._end_ns + self.interval_ns
        self._count = 0

    def _fresh(self, at_ns: int) -> bool:
        window = int(self.stale_intervals * self.interval_ns) + self._lag_ns
        return bool(self._last_data_ns) and at_ns - self._last_data_ns <= window

    def _by_data(self, samples: int, ts: int, sampled: bool) -> None:
        step = self.interval_ns
        if not self._end_ns:
            if not sampled:
                return
            self._anchor(ts)
            self._rephase = False
        elif sampled and ts >= self._end_ns:
            closes = 0
            while ts >= self._end_ns and closes < MAX_CLOSE:
                # a new session may shift the phase by up to an interval: an open interval left
                # empty by the reconnect takes the new session's first sample rather than
                # closing empty (nothing was lost)
                if self._rephase and not self._count and ts < self._end_ns + step:
                    break
                self._close()
                closes += 1
            if ts >= self._end_ns + step:
                self._anchor(ts)  # a long outage: its start was reported, the grid moves on
        if sampled and self._rephase and ts >= self._start_ns:
            self._end_ns = ts + step // 2
            self._rephase = False
        self._count += samples

    def tick(self, wall: float) -> None:
        """Close the intervals silence has ended (see the module docstring); call often."""
        if not self._first_tick_wall:
            self._first_tick_wall = wall
        mark_wall, mark_samples = self._rate_mark
        if wall - mark_wall >= 1.0:
            if mark_wall:
                self.updates_per_s = (self.samples_total - mark_samples) / (wall - mark_wall)
            self._rate_mark = (wall, self.samples_total)
        now = self.reference_ns(wall)
        if not self._end_ns:
            grace = max(self.connect_grace_s, self.stale_intervals * self.interval_wall)
            if not now or wall - self._first_tick_wall < grace:
                return  # still connecting: neither up nor down yet
            self._start_ns, self._end_ns = now - self.interval_ns, now
        closes = 0
        wait = self.interval_ns * SILENCE_MARGIN // 4 + self._lag_ns
        while now >= self._end_ns + wait and closes < MAX_CLOSE:
            self._close()
            closes += 1
        if closes == MAX_CLOSE and now >= self._end_ns + wait:
            # a stalled collector skips intervals rather than replaying them
            self._start_ns, self._end_ns = now - self.interval_ns, now

    def reference_ns(self, wall: float) -> int:
        """The event time silence is judged on: the fabric's, or the wall clock's before any
        target has shown a time."""
        return self.fabric.now_ns(wall) or wall_ns(wall)

    @property
    def pending_intervals(self) -> int:
        """Closed intervals whose health samples wait for :meth:`drain`."""
        return len(self._closed)

    def drain(self, builder: BatchBuilder) -> int:
        """Append the closed intervals' health samples; returns how many intervals. The expected
        count is the one known now: the rows of the closed intervals have been taken."""
        closed, self._closed = self._closed, []
        expected = float(self.expected)
        for end, up, received, errors in closed:
            for metric, value in ((UP, 1.0 if up else 0.0), (EXPECTED, expected),
                                  (RECEIVED, float(received)), (ERRORS, float(errors))):
                builder.add(end, self.name, "", metric, -1, value)
        return len(closed)

    # -- state --------------------------------------------------------------------------------

    def no_mapped_data(self, wall: float | None = None) -> bool:
        """It answers, and for an interval since it connected nothing it sent was mapped."""
        if not self.connected or not self._answered_wall:
            return False
        if self.samples_total > self._samples_at_connect:
            return False
        wall = time.monotonic() if wall is None else wall
        return (wall - self._answered_wall >= self.interval_wall
                or self.messages_total - self._messages_at_connect > 1)

    def state(self, wall: float) -> str:
        if self.connected and self.no_mapped_data(wall):
            return "no_mapped_data"
        if self.is_up(wall):
            return "up"
        if not self.connects and not self.last_data_wall:
            return "connecting" if not self.last_error else "down"
        return "down"

    def is_up(self, wall: float) -> bool:
        if not self.connected or not self._last_data_ns or self.no_mapped_data(wall):
            return False
        return self._fresh(self.reference_ns(wall) - self.interval_ns)

    def snapshot(self, wall: float | None = None) -> dict[str, Any]:
        wall = time.monotonic() if wall is None else wall
        return {
            "protocol": self.protocol, "address": self.address, "profile": self.profile,
            "state": self.state(wall), "up": self.is_up(wall), "connected": self.connected,
            "synced": self.synced, "connects": self.connects, "last_error": self.last_error,
            "last_update_age_s": (wall - self.last_data_wall) if self.last_data_wall else None,
            "samples_total": self.samples_total, "messages_total": self.messages_total,
            "deletes_total": self.deletes_total, "updates_per_s": self.updates_per_s,
            "expected": self.expected, "received": float(self._last_received),
            "errors": dict(self.errors), "errors_total": self.error_total,
            "clock": self.clock_source, "clock_note": self.clock_note,
            "port_names": self.port_names, "interval_s": self.interval_s,
            "lag_s": self._lag_ns / 1e9,
        }
