"""The rule of :mod:`pipeline.rates` in numpy: its constants, and intervals judged in columns.

:func:`intervals` takes rows sorted by series then event time (each time once per series) and
judges every row's interval, with the series' earlier sample times when the rows continue a
series seen before (:class:`pipeline.rates.state.RateState` keeps them). :func:`judge` is the
per-interval decision that :func:`pipeline.rates.sql.judge_sql` spells in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.model import FLAG_COUNTER32, FLAG_RESET

NS = 1_000_000_000
#: Counter32 sources wrap at 2**32 (wider counters do not wrap in practice)
COUNTER32_MODULUS = 2**32
#: an interval longer than this many times the series' cadence is a gap
GAP_FACTOR = 2.5
#: the cadence is the median of at most this many intervals before the judged one ...
CADENCE_INTERVALS = 5
#: ... and is known once there are this many
CADENCE_MIN = 2
#: how far back the cadence looks, and the longest interval that can have a rate
HORIZON_NS = 120 * NS

#: "no sample here" in the arrays of sample times
MISSING = np.iinfo(np.int64).min


class Status(IntEnum):
    OK = 0
    FIRST = 1
    GAP = 2
    RESET = 3
    WRAP = 4
    LATE = 5  # not newer than the series' last sample: dropped (state only)
    GAUGE = 6  # not a counter: passed through


#: the statuses whose interval has a rate
RATED: tuple[int, ...] = (int(Status.OK), int(Status.WRAP))


def per_second(increase: NDArray[np.float64], span_ns: NDArray[Any]) -> NDArray[np.float64]:
    """Increase over a span of event time (ns) as a per-second rate; NaN for an empty span.
    The one division every reader uses, so a span of one interval gives bit-identical rates."""
    span = np.asarray(span_ns, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, np.asarray(increase, np.float64) * NS / span, np.nan)


def judge(first: NDArray[np.bool_], prev_value: NDArray[np.float64],
          value: NDArray[np.float64], flags: NDArray[Any], dt_ns: NDArray[np.float64],
          cadence_ns: NDArray[np.float64], counter: NDArray[np.bool_],
          ) -> tuple[NDArray[np.float64], NDArray[np.int8]]:
    """``(increase, status)`` of intervals from ``prev_value`` to ``value`` (``flags``: the later
    sample's) lasting ``dt_ns``, for a series of cadence ``cadence_ns`` (0: not known yet)."""
    f = np.asarray(flags).astype(np.int64)
    d = value - prev_value
    wrapped = d + COUNTER32_MODULUS
    down = d < 0
    wrap = (down & ((f & FLAG_COUNTER32) != 0) & (wrapped < COUNTER32_MODULUS // 2)
            & (prev_value < COUNTER32_MODULUS))
    reset = ((f & FLAG_RESET) != 0) | (down & ~wrap)
    gap = (dt_ns > HORIZON_NS) | ((cadence_ns > 0) & (dt_ns > GAP_FACTOR * cadence_ns))
    gauge = ~counter
    status = np.select([gauge, first, reset, gap, wrap],
                       [Status.GAUGE, Status.FIRST, Status.RESET, Status.GAP, Status.WRAP],
                       Status.OK).astype(np.int8)
    increase = np.select([gauge | first, reset, wrap], [np.nan, value, wrapped], d)
    return increase.astype(np.float64), status


@dataclass(frozen=True)
class Intervals:
    """Per row: the interval that ends at it."""

    increase: NDArray[np.float64]  # counts known in the interval (NaN: first, gauge)
    dt_ns: NDArray[np.float64]  # its length (NaN: first)
    status: NDArray[np.int8]

    @property
    def rated(self) -> NDArray[np.bool_]:
        return np.isin(self.status, RATED)

    @property
    def rate(self) -> NDArray[np.float64]:
        """Per second where the interval has a rate, else NaN."""
        return np.where(self.rated, per_second(self.increase, self.dt_ns), np.nan)


def run_positions(series: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each row's position in its run of equal ``series`` (rows sorted by series)."""
    n = series.shape[0]
    start = np.ones(n, bool)
    start[1:] = series[1:] != series[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n, dtype=np.int64) - first


def sample_times(ts: NDArray[np.int64], pos: NDArray[np.int64],
                 before: NDArray[np.int64] | None) -> NDArray[np.int64]:
    """``(n, CADENCE_INTERVALS + 2)``: each row's time, then the times of the samples before it
    (newest first), from the rows before it in its run and then from ``before`` (per row, the
    series' sample times before the run, oldest first, :data:`MISSING` where none)."""
    n, width = ts.shape[0], CADENCE_INTERVALS + 2
    if before is not None and n and not pos.any():
        # every row starts its run (a live interval: one sample per series): its history is
        # the state's, newest first
        return np.concatenate([ts[:, None], before[:, ::-1]], axis=1)
    out = np.full((n, width), MISSING, np.int64)
    rows = np.arange(n)
    for k in range(width):
        inside = pos >= k
        out[inside, k] = ts[rows[inside] - k]
        if before is not None and k:
            outside = ~inside
            # the sample k back lies (k - pos) samples before the run: before's newest is last
            out[outside, k] = before[outside, width - 1 + pos[outside] - k]
    return out


#: compare-exchanges that sort five values (a sorting network: the same answer as a sort, in
#: nine vectorised min/max passes instead of a row-by-row sort of an (n, 5) array)
_SORT5 = ((0, 1), (3, 4), (2, 4), (2, 3), (1, 4), (0, 3), (0, 2), (1, 3), (1, 2))
if CADENCE_INTERVALS != 5:
    raise ImportError("the cadence's sorting network is for five intervals: write one for "
                      f"{CADENCE_INTERVALS}")


def cadence(times: NDArray[np.int64]) -> NDArray[np.float64]:
    """The cadence (ns) at each row's interval from :func:`sample_times`' rows; 0 if unknown."""
    return cadence_before(times[:, 0], times[:, :0:-1])


def cadence_before(ts: NDArray[np.int64], history: NDArray[np.int64]) -> NDArray[np.float64]:
    """The cadence (ns) at the interval that ends at ``ts``; 0 if unknown: the median of the
    intervals between the ``CADENCE_INTERVALS + 1`` sample times before it (``history``, per row
    oldest first, :data:`MISSING` where none) that began within :data:`HORIZON_NS` of ``ts``."""
    n = ts.shape[0]
    if n == 0:
        return np.empty(0, np.float64)
    h = np.ascontiguousarray(history.T)  # one contiguous run per position in the history
    floor = ts - HORIZON_NS
    widths: list[NDArray[np.float64]] = []
    count = np.zeros(n, np.int64)
    for k in range(CADENCE_INTERVALS):
        valid = (h[k] != MISSING) & (h[k] >= floor)
        count += valid
        widths.append(np.where(valid, (h[k + 1] - np.where(valid, h[k], h[k + 1])
                                       ).astype(np.float64), np.inf))
    for i, j in _SORT5:
        widths[i], widths[j] = np.minimum(widths[i], widths[j]), np.maximum(widths[i], widths[j])
    # the middle one (odd count) or the two middle ones (even): positions 0..2 of five
    lo = _pick(np.maximum(count - 1, 0) // 2, widths)
    hi = _pick(np.minimum(count // 2, CADENCE_INTERVALS - 1), widths)
    return np.where(count >= CADENCE_MIN, (lo + hi) / 2, 0.0)


def _pick(index: NDArray[np.int64], columns: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """Per row, ``columns[index]``."""
    out = columns[0].copy()
    for k in range(1, int(index.max(initial=0)) + 1):
        np.copyto(out, columns[k], where=index == k)
    return out


def intervals(series: NDArray[np.int64], ts: NDArray[np.int64], value: NDArray[np.float64],
              flags: NDArray[Any], counter: NDArray[np.bool_],
              before: NDArray[np.int64] | None = None,
              before_value: NDArray[np.float64] | None = None) -> Intervals:
    """Judge every row's interval. Rows are sorted by ``series`` then ``ts`` (strictly increasing
    within a series). ``before``/``before_value``: per row, the series' last
    ``CADENCE_INTERVALS + 1`` sample times before these rows (oldest first, :data:`MISSING`
    where none) and the last value; None for series that start here."""
    pos = run_positions(series)
    return intervals_from_times(sample_times(ts, pos, before), pos, value, flags, counter,
                                before_value)


def intervals_from_times(times: NDArray[np.int64], pos: NDArray[np.int64],
                         value: NDArray[np.float64], flags: NDArray[Any],
                         counter: NDArray[np.bool_],
                         before_value: NDArray[np.float64] | None) -> Intervals:
    """:func:`intervals` once the rows' :func:`sample_times` (and run positions) are known."""
    n = times.shape[0]
    ts, prev_ts = times[:, 0], times[:, 1]
    prev_value = np.full(n, np.nan)
    inside = pos >= 1  # the previous sample is the row before
    prev_value[inside] = value[np.flatnonzero(inside) - 1]
    if before_value is not None:
        prev_value[~inside] = before_value[~inside]
    return _judged(ts, prev_ts, prev_value, value, flags, cadence(times), counter)


def _judged(ts: NDArray[np.int64], prev_ts: NDArray[np.int64], prev_value: NDArray[np.float64],
            value: NDArray[np.float64], flags: NDArray[Any], cadence_ns: NDArray[np.float64],
            counter: NDArray[np.bool_]) -> Intervals:
    first = prev_ts == MISSING
    dt_ns = np.where(first, np.nan, (ts - np.where(first, ts, prev_ts)).astype(np.float64))
    increase, status = judge(first, prev_value, value, flags, dt_ns, cadence_ns, counter)
    return Intervals(increase, dt_ns, status)
