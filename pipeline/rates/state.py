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
from pipeline.rates.rule import (
    CADENCE_INTERVALS,
    MISSING,
    NS,
    RATED,
    Status,
    intervals_from_times,
    run_positions,
    sample_times,
)

_KEEP = CADENCE_INTERVALS + 1  # sample times kept per series


@dataclass(frozen=True)
class RateFrame:
    """The rows of a batch after rate conversion, sorted by series then time.

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
        self.stats = RateStats()

    def _grow(self, n: int) -> None:
        have = self.times.shape[0]
        if n <= have:
            return
        extra = max(n - have, have // 2, 64)
        self.times = np.vstack([self.times, np.full((extra, _KEEP), MISSING, np.int64)])
        self.last_value = np.concatenate([self.last_value, np.full(extra, np.nan)])

    def update(self, batch: SampleBatch, series: NDArray[np.int64],
               port: NDArray[np.int64]) -> RateFrame:
        """Judge a batch whose rows have the given series/port ids; advances the state."""
        n = len(batch)
        self.stats.rows += n
        if n == 0:
            return RateFrame.empty()
        self._grow(int(series.max()) + 1)
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

        status = judged.status
        st = self.stats
        st.rates += int(np.isin(status, RATED).sum())
        st.wraps += int((status == Status.WRAP).sum())
        st.resets += int((status == Status.RESET).sum())
        st.gaps += int((status == Status.GAP).sum())
        st.late += n_late
        return RateFrame(sid, port[order], metric, batch.qual[order].astype(np.int64), ts, value,
                         judged.increase, judged.rate, judged.dt_ns / NS, status)
