"""The rule of :mod:`pipeline.rates` carried across batches: per-series memory in arrays.

Per series (ids from the caller, dense integers) the state keeps the last
``CADENCE_INTERVALS + 1`` sample times and the last value: all the history the rule looks at. A
batch is judged in columns (:func:`pipeline.rates.rule.intervals`) whatever its shape: one sample
per series (a live interval), several (a backlog) or a whole replay give the same answer as
feeding the samples one by one, because the rule depends on the samples only.

A sample not newer than its series' last one (a duplicate, an out-of-order delivery) is ``LATE``:
dropped and counted, so every row of a :class:`RateFrame` is news.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.metrics import IS_COUNTER
from pipeline.model import SampleBatch
from pipeline.rates.live import judge_live
from pipeline.rates.rule import (
    CADENCE_INTERVALS,
    MISSING,
    NS,
    RATED,
    Intervals,
    Status,
    intervals_from_times,
    run_positions,
    sample_times,
)

_KEEP = CADENCE_INTERVALS + 1  # sample times kept per series
_N_STATUS = max(int(s) for s in Status) + 1


@dataclass(frozen=True)
class RateFrame:
    """The rows of a batch after rate conversion, grouped by series (a series' rows together,
    in time order): sorted by series then time, except that a batch holding each series once keeps
    its own row order.

    ``rate`` is per second where the interval has one (NaN otherwise); ``increase`` the counts
    known in the interval (NaN for a first sample and for gauges); ``value`` the raw sample (the
    gauge's value, or the counter's reading); ``dt_s`` the interval (NaN when there is none).
    """

    series: NDArray[np.int64]
    port: NDArray[np.int64]
    metric: NDArray[np.int64]
    qual: NDArray[np.int64]
    ts_ns: NDArray[np.int64]
    value: NDArray[np.float64]
    increase: NDArray[np.float64]
    rate: NDArray[np.float64]
    dt_s: NDArray[np.float64]
    status: NDArray[np.int8]

    def __len__(self) -> int:
        return int(self.series.shape[0])

    @classmethod
    def empty(cls) -> RateFrame:
        e, f = np.empty(0, np.int64), np.empty(0, np.float64)
        return cls(e, e, e, e, e, f, f, f, f, np.empty(0, np.int8))


@dataclass
class RateStats:
    rows: int = 0
    rates: int = 0
    wraps: int = 0
    resets: int = 0
    gaps: int = 0
    late: int = 0


class RateState:
    """The per-series memory that turns counter readings into increases and rates."""

    def __init__(self) -> None:
        self.times = np.empty((0, _KEEP), np.int64)  # oldest first, MISSING where none
        self.last_value = np.empty(0, np.float64)
        self._row = np.empty(0, np.int64)  # scratch for _each_once
        self.stats = RateStats()

    def _grow(self, n: int) -> None:
        have = self.times.shape[0]
        if n <= have:
            return
        extra = max(n - have, have // 2, 64)
        self.times = np.vstack([self.times, np.full((extra, _KEEP), MISSING, np.int64)])
        self.last_value = np.concatenate([self.last_value, np.full(extra, np.nan)])
        self._row = np.concatenate([self._row, np.zeros(extra, np.int64)])

    def _each_once(self, series: NDArray[np.int64]) -> bool:
        """Whether no series appears twice among the rows (linear: each row writes its index at
        its series, and a series written twice keeps only its last row's)."""
        rows = np.arange(series.shape[0])
        self._row[series] = rows
        return bool((self._row[series] == rows).all())

    def update(self, batch: SampleBatch, series: NDArray[np.int64],
               port: NDArray[np.int64]) -> RateFrame:
        """Judge a batch whose rows have the given series/port ids; advances the state."""
        n = len(batch)
        self.stats.rows += n
        if n == 0:
            return RateFrame.empty()
        self._grow(int(series.max()) + 1)
        if self._each_once(series):
            return self._live(batch, series, port)
        order = np.lexsort((batch.ts_ns, series))
        sid, ts = series[order], batch.ts_ns[order]
        # late: not newer than the series' last sample, or a repeat of the row before's time
        late = ts <= self.times[sid, -1]
        late[1:] |= (sid[1:] == sid[:-1]) & (ts[1:] == ts[:-1])
        n_late = int(late.sum())
        if n_late:
            order, sid, ts = order[~late], sid[~late], ts[~late]
        if not sid.size:
            self.stats.late += n_late
            return RateFrame.empty()
        value, metric = batch.value[order], batch.metric[order].astype(np.int64)
        pos = run_positions(sid)
        times = sample_times(ts, pos, self.times[sid])
        judged = intervals_from_times(times, pos, value, batch.flags[order], IS_COUNTER[metric],
                                      self.last_value[sid])
        # the newest row of each series holds its newest sample times: the new state
        newest = np.flatnonzero(np.r_[sid[1:] != sid[:-1], True])
        self.times[sid[newest]] = times[newest, _KEEP - 1::-1]
        self.last_value[sid[newest]] = value[newest]
        return self._frame(judged, n_late, sid, port[order], metric,
                           batch.qual[order].astype(np.int64), ts, value)

    def _live(self, batch: SampleBatch, series: NDArray[np.int64],
              port: NDArray[np.int64]) -> RateFrame:
        """A batch that holds each series once: the compiled live path
        (:mod:`pipeline.rates.live`), the rows kept in their order."""
        metric = batch.metric.astype(np.int64)
        increase, dt_ns, status, n_late = judge_live(
            series, batch.ts_ns, batch.value, batch.flags, IS_COUNTER[metric], self.times,
            self.last_value)
        judged = Intervals(increase, dt_ns, status)
        qual = batch.qual.astype(np.int64)
        if not n_late:
            return self._frame(judged, 0, series, port, metric, qual, batch.ts_ns, batch.value)
        keep = status != Status.LATE
        return self._frame(Intervals(increase[keep], dt_ns[keep], status[keep]), n_late,
                           series[keep], port[keep], metric[keep], qual[keep],
                           batch.ts_ns[keep], batch.value[keep])

    def _frame(self, judged: Intervals, n_late: int, sid: NDArray[np.int64],
               port: NDArray[np.int64], metric: NDArray[np.int64], qual: NDArray[np.int64],
               ts: NDArray[np.int64], value: NDArray[np.float64]) -> RateFrame:
        """The judged rows as a frame, counted in the stats."""
        # every status counted in one pass (statuses are small non-negative codes)
        counts = np.bincount(judged.status, minlength=_N_STATUS).tolist()
        st = self.stats
        st.rates += sum(counts[s] for s in RATED)
        st.wraps += counts[Status.WRAP]
        st.resets += counts[Status.RESET]
        st.gaps += counts[Status.GAP]
        st.late += n_late
        if not len(sid):
            return RateFrame.empty()
        return RateFrame(sid, port, metric, qual, ts, value, judged.increase, judged.rate,
                         judged.dt_ns / NS, judged.status)
