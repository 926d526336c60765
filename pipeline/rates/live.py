"""The rate rule for a live interval, compiled: one pass over the rows, the state read and written
in place.

A live interval holds each series once, continuing it by one sample (the detect chain's usual
wave: every device's newest poll). Its rows are independent, so the whole rule of
:mod:`pipeline.rates.rule` — the cadence at the interval (:func:`~pipeline.rates.rule.
cadence_before`), the decision (:func:`~pipeline.rates.rule.judge`) and the state's shift — runs
row by row in one compiled loop (numba), instead of some forty numpy passes over the rows and
their temporaries. At 80 k switch ports (2.5 M series per interval) the numpy spelling spent
most of detection's time here.

This is the same rule, spelled a second time for speed: :func:`judge_live` must give exactly
what :func:`~pipeline.rates.rule.live_intervals` gives (statuses, increases, intervals, and the
state after), which ``tests/pipeline/test_rates_live.py`` checks on every kind of interval (first,
gauge, wrap, reset, gap, late, short histories, the horizon). Change both or neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.rates.rule import (
    CADENCE_INTERVALS,
    CADENCE_MIN,
    COUNTER32_MODULUS,
    GAP_FACTOR,
    HORIZON_NS,
    MISSING,
    Status,
)

_KEEP = CADENCE_INTERVALS + 1
_OK, _FIRST, _GAP, _RESET, _WRAP, _LATE, _GAUGE = (
    int(Status.OK), int(Status.FIRST), int(Status.GAP), int(Status.RESET), int(Status.WRAP),
    int(Status.LATE), int(Status.GAUGE))
_C32, _RST = int(FLAG_COUNTER32), int(FLAG_RESET)
_MOD, _HALF = float(COUNTER32_MODULUS), float(COUNTER32_MODULUS // 2)


@njit(cache=True, nogil=True)
def _kernel(sid: Any, ts: Any, value: Any, flags: Any, counter: Any, times: Any,
            last_value: Any, increase: Any, dt_ns: Any, status: Any) -> int:  # pragma: no cover
    widths = np.empty(CADENCE_INTERVALS, np.float64)
    late = 0
    for i in range(sid.shape[0]):
        s = sid[i]
        t = ts[i]
        prev_t = times[s, _KEEP - 1]
        if t <= prev_t:  # not newer than the series' last sample: dropped, state untouched
            status[i] = _LATE
            late += 1
            continue
        # the cadence: median of the intervals of the history that began within the horizon
        floor = t - HORIZON_NS
        count = 0
        for k in range(CADENCE_INTERVALS):
            start = times[s, k]
            if start != MISSING and start >= floor:
                w = float(times[s, k + 1] - start)
                j = count  # insertion into the sorted widths
                while j > 0 and widths[j - 1] > w:
                    widths[j] = widths[j - 1]
                    j -= 1
                widths[j] = w
                count += 1
        cad = 0.0
        if count >= CADENCE_MIN:
            cad = (widths[(count - 1) // 2] + widths[min(count // 2, CADENCE_INTERVALS - 1)]) / 2
        # the decision, as rule.judge takes it
        v = value[i]
        pv = last_value[s]
        first = prev_t == MISSING
        dt = np.nan if first else float(t - prev_t)
        d = v - pv
        wrapped = d + _MOD
        down = d < 0
        f = flags[i]
        wrap = down and (f & _C32) != 0 and wrapped < _HALF and pv < _MOD
        reset = (f & _RST) != 0 or (down and not wrap)
        gap = dt > HORIZON_NS or (cad > 0 and dt > GAP_FACTOR * cad)
        # rule.judge's order: gauge, first, reset, gap, wrap (the status); the increase of a
        # gap is still the counter's (wrapped or not)
        if not counter[i] or first:
            status[i] = _GAUGE if not counter[i] else _FIRST
            increase[i] = np.nan
        elif reset:
            status[i], increase[i] = _RESET, v
        elif wrap:
            status[i], increase[i] = (_GAP if gap else _WRAP), wrapped
        else:
            status[i], increase[i] = (_GAP if gap else _OK), d
        dt_ns[i] = dt
        # the state: the history shifted by the new sample time, and the new last value
        for k in range(_KEEP - 1):
            times[s, k] = times[s, k + 1]
        times[s, _KEEP - 1] = t
        last_value[s] = v
    return late


def judge_live(sid: NDArray[np.int64], ts: NDArray[np.int64], value: NDArray[np.float64],
               flags: NDArray[Any], counter: NDArray[np.bool_], times: NDArray[np.int64],
               last_value: NDArray[np.float64]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int8], int]:
    """``(increase, dt_ns, status, late)`` of rows that each continue a different series
    ``sid`` by one sample, advancing the state ``times`` (per series the last
    ``CADENCE_INTERVALS + 1`` sample times, oldest first) and ``last_value`` in place. Rows not
    newer than their series' last sample are ``LATE`` (their state untouched; ``late`` counts
    them)."""
    n = sid.shape[0]
    increase = np.empty(n, np.float64)
    dt_ns = np.empty(n, np.float64)
    status = np.empty(n, np.int8)
    late = int(_kernel(np.ascontiguousarray(sid), np.ascontiguousarray(ts),
                       np.ascontiguousarray(value, np.float64), np.ascontiguousarray(flags),
                       np.ascontiguousarray(counter), times, last_value, increase, dt_ns,
                       status))
    return increase, dt_ns, status, late
