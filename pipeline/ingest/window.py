"""Which sample times ingest stores: a sane window around the ingest clock, which no one device
can move.

A device whose clock is wrong must not poison the store. One sample stamped in 2200 would be
stored with its ``DateTime`` wrapped, move the fabric clock (the newest stored sample: ``now``
for every query) and the rollups' watermark there, and leave real devices' data behind; one
message of samples a day apart over 200 days would create 200 daily partitions. So ingest keeps
the rows of a message whose time is within ``[clock - max_past_s, clock + max_ahead_s]``
(``ingest.max_past_s``, default one day but never more than the store keeps, and
``ingest.max_ahead_s``, default five minutes) and sends the others to the dead-letter topic with
the reason (their time, how far off it is, the setting that bounds it); a time that is not
positive, or past what the store's ``DateTime`` holds (2106), is refused whatever the window.

**The ingest clock** is this process's wall clock, moved ahead when the fabric's own event time
runs ahead of it (a lab at ``--speed 10``, a device farm on its own time base): by the fabric's
*lead*, the lower median over the devices heard lately (``idle_s``) of how far ahead of the wall
clock each device's time was when its newest message arrived, a device's time being the median
of its message's times (one absurd sample does not make its device's time). A lower median is
moved by no one device: a device in 2200 among two or more others, or one absurd sample among
normal ones, leaves the clock where the others say. The lead is never negative: data that arrive
late (a backlog after an outage) do not pull the clock back. The devices of the messages being
screened count too (``candidates``), so a fresh ingest that finds a fabric far ahead follows it
from its first poll; a fabric of a single device is that device's own clock.

The rollups' watermark is held to the ingest clock as well (:mod:`pipeline.ingest.loop`), so a
device a few minutes fast, within the window, cannot complete buckets for the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray

from pipeline.model import SampleBatch
from pipeline.times import format_duration, format_instant
from pipeline.wire.items import BadItem

NS = 1_000_000_000
#: the last instant a ClickHouse ``DateTime`` (unsigned 32-bit seconds) holds
LAST_STORABLE_NS = (2**32 - 1) * NS
DAY_S = 86_400.0

WallClock = Callable[[], int]


def _median(ts: NDArray[np.int64]) -> int:
    """The lower median, exactly (a float median would round ns away); of an evenly strided
    sample of at most ~64 of a long message's times (as robust to a few absurd ones, and cheap
    on the hot path)."""
    if len(ts) > 64:
        ts = ts[::len(ts) // 32]
    k = (len(ts) - 1) // 2
    return int(np.partition(ts, k)[k])


def device_times(batch: SampleBatch) -> dict[str, int]:
    """Each device of a batch → the median of its rows' times (a robust time for the batch)."""
    if not len(batch):
        return {}
    codes = batch.device
    lo, hi = int(codes.min()), int(codes.max())
    if lo == hi:  # the usual message: one device's poll
        return {batch.devices[lo]: _median(batch.ts_ns)}
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    ends = np.r_[starts[1:], len(order)]
    out = {}
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        out[batch.devices[int(sorted_codes[start])]] = _median(batch.ts_ns[order[start:end]])
    return out


class TimeWindow:
    """The ingest clock and the window of sample times it accepts (module docstring)."""

    def __init__(self, max_past_s: float = DAY_S, max_ahead_s: float = 300.0,
                 retention_days: int | None = None, idle_s: float = 120.0,
                 wall: WallClock = time.time_ns) -> None:
        past = max_past_s if retention_days is None else min(max_past_s, retention_days * DAY_S)
        self.max_past_ns = int(past * NS)
        self.max_ahead_ns = int(max_ahead_s * NS)
        self.idle_ns = int(idle_s * NS)
        self._wall = wall
        self._lock = threading.Lock()
        #: device → (how far its time was ahead of the wall clock, when it was heard: wall ns)
        self._leads: dict[str, tuple[int, int]] = {}
        #: the lead of the newest :meth:`clock_ns`
        self.last_lead_ns = 0
        #: rows refused so far, and the newest refusal
        self.refused = 0
        self.last_refused = ""

    def lead_ns(self, candidates: Mapping[str, int] | None = None) -> int:
        """How far the fabric's time runs ahead of the wall clock now (never negative):
        the lower median of the live devices' leads, ``candidates`` (device → its time in the
        messages being screened) counted in."""
        now = self._wall()
        with self._lock:
            leads = {dev: lead for dev, (lead, heard) in self._leads.items()
                     if now - heard <= self.idle_ns}
        for dev, ts in (candidates or {}).items():
            leads[dev] = ts - now
        if not leads:
            return 0
        return max(0, _median(np.fromiter(leads.values(), np.int64, len(leads))))

    def clock_ns(self, candidates: Mapping[str, int] | None = None) -> int:
        """The ingest clock: the wall clock plus the fabric's lead."""
        self.last_lead_ns = self.lead_ns(candidates)
        return self._wall() + self.last_lead_ns

    def bounds(self, clock_ns: int) -> tuple[int, int]:
        """The first and last sample times accepted at ``clock_ns`` (inclusive)."""
        lo = max(1, clock_ns - self.max_past_ns)
        hi = min(LAST_STORABLE_NS, clock_ns + self.max_ahead_ns)
        return lo, hi

    def screen(self, batch: SampleBatch, clock_ns: int) -> tuple[SampleBatch, tuple[BadItem, ...]]:
        """The rows within the window at ``clock_ns``, and the others as bad items (those
        before it, then those after it, each with its first row's reason)."""
        lo, hi = self.bounds(clock_ns)
        ts = batch.ts_ns
        if not len(ts) or (int(ts.min()) >= lo and int(ts.max()) <= hi):
            return batch, ()
        early, late = ts < lo, ts > hi
        bad = []
        for mask, side in ((early, "before"), (late, "after")):
            rows = np.flatnonzero(mask)
            if len(rows):
                first = int(rows[0])
                bad.append(BadItem(index=first, count=len(rows),
                                   reason=self._reason(int(ts[first]), clock_ns, side)))
        kept = batch.take(~(early | late))
        refused = len(batch) - len(kept)
        with self._lock:
            self.refused += refused
            self.last_refused = bad[0].reason
        return kept, tuple(bad)

    def _reason(self, ts: int, clock_ns: int, side: str) -> str:
        when, clock = format_instant(ts, 0), format_instant(clock_ns, 0)
        if ts <= 0:
            return f"sample time {ts} ns is not after 1970 (the ingest clock is {clock})"
        if ts > LAST_STORABLE_NS and self.bounds(clock_ns)[1] == LAST_STORABLE_NS:
            return (f"sample time {when} is past what the store's time columns hold "
                    f"({format_instant(LAST_STORABLE_NS, 0)})")
        off = format_duration(abs(ts - clock_ns), parts=2)
        if side == "before":
            return (f"sample time {when} is {off} before the ingest clock ({clock}); at most "
                    f"{format_duration(self.max_past_ns)} is accepted (ingest.max_past_s, "
                    "and the store's retention_days)")
        return (f"sample time {when} is {off} after the ingest clock ({clock}); at most "
                f"{format_duration(self.max_ahead_ns)} is accepted (ingest.max_ahead_s)")

    def accepted(self, times: Mapping[str, int]) -> None:
        """Rows were kept: their devices' times (:func:`device_times`) are what the clock goes
        by from now on."""
        if not times:
            return
        now = self._wall()
        with self._lock:
            for dev, ts in times.items():
                self._leads[dev] = (ts - now, now)
            if len(self._leads) > 100_000:  # forget the devices long gone
                self._leads = {d: v for d, v in self._leads.items() if now - v[1] <= self.idle_ns}
