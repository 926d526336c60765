"""Counter → rate, in one place: vectorised over batch columns, on event time only.

Per-series state (last event time, last value, the series' cadence) lives in arrays indexed by a
series id (:mod:`detectors.series`). For every counter sample the rate is ``Δvalue / Δt`` between
it and the series' previous sample, where Δt is the difference of the devices' timestamps, never of
arrival times. The cases that break a naive difference are handled here and made visible in a
per-row ``status``:

* ``WRAP``  a Counter32 source (``FLAG_COUNTER32``) went backwards by less than half its modulus:
  it wrapped at 2**32; the rate adds the modulus back.
* ``RESET`` the device says its counters restarted (``FLAG_RESET``), a 64-bit counter went
  backwards, or a Counter32 fell by more than a wrap can explain: no rate for that interval, the
  series restarts from the new value (a rate across an unknown restart time would be invented).
* ``GAP``   the interval since the previous sample exceeds ``gap_factor`` times the series' cadence:
  no rate across it (averaging a long outage would blur what happened in it).
* ``FIRST`` the series' first sample; ``LATE`` a sample not newer than the last one (a duplicate or
  an out-of-order delivery): ignored and counted.

The cadence of a series is learned from its own samples: the median of its last few intervals, so
one odd interval (the initial values a subscription sends right away, a missed poll) moves nothing,
while a reconfigured cadence is adopted once it is the majority of the recent intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

from pipeline.metrics import COUNTER32_MODULUS, IS_COUNTER
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, SampleBatch

_NS = 1e9


class Status(IntEnum):
    OK = 0
    FIRST = 1
    GAP = 2
    RESET = 3
    WRAP = 4
    LATE = 5
    GAUGE = 6


@dataclass(frozen=True)
class RateFrame:
    """The rows of one or more batches after rate conversion, sorted by series then time.

    ``rate`` is per second for counters with a usable previous sample (NaN otherwise); ``value`` is
    the raw sample (the gauge's value, or the counter's reading); ``dt_s`` is the interval the rate
    spans (NaN when there is none). LATE rows are dropped, so every row is news.
    """

    series: NDArray[np.int64]
    port: NDArray[np.int64]
    metric: NDArray[np.int64]
    qual: NDArray[np.int64]
    ts_ns: NDArray[np.int64]
    value: NDArray[np.float64]
    rate: NDArray[np.float64]
    dt_s: NDArray[np.float64]
    status: NDArray[np.int8]

    def __len__(self) -> int:
        return int(self.series.shape[0])


@dataclass
class RateStats:
    rows: int = 0
    rates: int = 0
    wraps: int = 0
    resets: int = 0
    gaps: int = 0
    late: int = 0


class RateState:
    """The per-series memory that turns counter readings into rates."""

    def __init__(self, gap_factor: float = 2.5, memory: int = 5) -> None:
        if gap_factor <= 1.0:
            raise ValueError("gap_factor must exceed 1 (a gap is longer than one interval)")
        self.gap_factor = gap_factor
        self.memory = memory
        self.last_ts = np.empty(0, np.int64)
        self.last_value = np.empty(0, np.float64)
        self.interval_ns = np.empty(0, np.float64)
        self._recent = np.empty((0, memory), np.float64)  # the last intervals, newest last
        self.stats = RateStats()

    def _grow(self, n: int) -> None:
        have = self.last_ts.shape[0]
        if n <= have:
            return
        extra = max(n - have, have // 2, 64)
        self.last_ts = np.concatenate([self.last_ts, np.full(extra, -1, np.int64)])
        self.last_value = np.concatenate([self.last_value, np.zeros(extra)])
        self.interval_ns = np.concatenate([self.interval_ns, np.full(extra, np.nan)])
        self._recent = np.vstack([self._recent, np.full((extra, self.memory), np.nan)])

    def update(self, batch: SampleBatch, series: NDArray[np.int64],
               port: NDArray[np.int64]) -> RateFrame:
        """Convert a batch whose rows have the given series/port ids; advances the state."""
        n = len(batch)
        self.stats.rows += n
        if n == 0:
            e = np.empty(0, np.int64)
            f = np.empty(0, np.float64)
            return RateFrame(e, e, e, e, e, f, f, f, np.empty(0, np.int8))
        self._grow(int(series.max()) + 1)
        order = np.lexsort((batch.ts_ns, series))
        sid = series[order]
        ts = batch.ts_ns[order]
        # late: not newer than the series' state, or a repeat of the previous row's time
        late = ts <= self.last_ts[sid]
        late[1:] |= (sid[1:] == sid[:-1]) & (ts[1:] == ts[:-1])
        n_late = int(late.sum())
        if n_late:
            order, sid, ts = order[~late], sid[~late], ts[~late]
            n = int(sid.shape[0])
        val = batch.value[order]
        flags = batch.flags[order]
        metric = batch.metric[order].astype(np.int64)
        counter = IS_COUNTER[metric]

        # previous sample: the row before in this batch when it is the same series, else the state
        same_prev = np.zeros(n, bool)
        same_prev[1:] = sid[1:] == sid[:-1]
        prev_ts = self.last_ts[sid].copy()
        prev_val = self.last_value[sid].copy()
        prev_ts[same_prev] = ts[np.flatnonzero(same_prev) - 1]
        prev_val[same_prev] = val[np.flatnonzero(same_prev) - 1]

        status = np.full(n, Status.OK, np.int8)
        first = prev_ts < 0
        dt_ns = (ts - prev_ts).astype(np.float64)
        interval = self.interval_ns[sid]
        known = np.isfinite(self._recent[sid]).sum(axis=1) >= 2  # a cadence needs two intervals
        gap = ~first & known & (dt_ns > self.gap_factor * interval)

        delta = val - prev_val
        reset = ~first & ((flags & FLAG_RESET) != 0)
        down = ~first & ~reset & counter & (delta < 0)
        c32 = (flags & FLAG_COUNTER32) != 0
        wrapped = delta + COUNTER32_MODULUS
        wrap = down & c32 & (wrapped < COUNTER32_MODULUS / 2) & (prev_val < COUNTER32_MODULUS)
        delta = np.where(wrap, wrapped, delta)
        reset |= down & ~wrap

        status[wrap] = Status.WRAP
        status[gap] = Status.GAP
        status[reset] = Status.RESET
        status[first] = Status.FIRST
        status[~counter] = Status.GAUGE

        usable = counter & ((status == Status.OK) | (status == Status.WRAP))
        dt_s = np.where(~first, dt_ns / _NS, np.nan)
        rate = np.full(n, np.nan)
        rate[usable] = delta[usable] / dt_s[usable]

        self._advance(sid, ts, val, dt_ns, first | reset)
        st = self.stats
        st.rates += int(usable.sum())
        st.wraps += int(wrap.sum())
        st.resets += int(reset.sum())
        st.gaps += int((gap & ~reset).sum())
        st.late += n_late
        return RateFrame(sid, port[order], metric, batch.qual[order].astype(np.int64), ts, val,
                         rate, dt_s, status)

    def _advance(self, sid: NDArray[np.int64], ts: NDArray[np.int64], val: NDArray[np.float64],
                 dt_ns: NDArray[np.float64], restart: NDArray[np.bool_]) -> None:
        # cadence from the newest interval of each series in this batch (rows are sorted by series
        # then time, so the last qualifying row of a run is the newest)
        rows = np.flatnonzero((dt_ns > 0) & ~restart)
        if rows.size:
            newest = rows[np.r_[sid[rows][1:] != sid[rows][:-1], True]]
            s = sid[newest]
            recent = np.roll(self._recent[s], -1, axis=1)
            recent[:, -1] = dt_ns[newest]
            self._recent[s] = recent
            ok = np.isfinite(recent)
            # median of the finite entries of each row (rows have at least the newest one)
            filled = np.where(ok, recent, np.inf)
            filled.sort(axis=1)
            count = ok.sum(axis=1)
            lo = filled[np.arange(s.size), (count - 1) // 2]
            hi = filled[np.arange(s.size), count // 2]
            self.interval_ns[s] = (lo + hi) / 2.0
        # the last row of each series is the new state
        if sid.size:
            last = np.flatnonzero(np.r_[sid[1:] != sid[:-1], True])
            self.last_ts[sid[last]] = ts[last]
            self.last_value[sid[last]] = val[last]

    def interval_s(self, series: NDArray[np.int64]) -> NDArray[np.float64]:
        """The learned cadence of the given series, in seconds (NaN before two samples)."""
        return self.interval_ns[series] / _NS
