"""The latest rate or gauge value of every port's metrics, and the frame detectors observe.

:class:`FeatureTable` is a matrix ``ports × columns``: one column per unqualified catalog metric,
eight per qualified one (PFC priority or queue 0..7). Each cell holds the newest per-second rate of
a counter (NaN when that sample had no usable rate: first, gap or reset) or the newest gauge value,
with the event time of that sample and the interval the rate spans. Different metrics of a port may
arrive in different messages; a detector evaluates a port when its driving metric has a new sample
and reads the companions it needs if they are fresh (within one cadence of the driver).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numba import njit
from numpy.typing import NDArray

from detectors.ports import PortIndex
from pipeline.metrics import CATALOG, METRIC_ID
from pipeline.rates.rule import Status
from pipeline.rates.state import RateFrame

S = TypeVar("S", bound=np.generic)
_GAUGE = int(Status.GAUGE)

#: slots per qualified metric: PFC priorities and egress queues 0..7
QUAL_SLOTS = 8


def _layout() -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    base = np.zeros(len(CATALOG), np.int64)
    width = np.zeros(len(CATALOG), np.int64)
    col = 0
    for i, m in enumerate(CATALOG):
        base[i] = col
        width[i] = QUAL_SLOTS if m.qualifier else 1
        col += int(width[i])
    return base, width, col


BASE, WIDTH, N_COLS = _layout()


def col(metric: str, qual: int = 0) -> int:
    """The table column of a metric (and its priority/queue slot)."""
    m = METRIC_ID[metric]
    if not 0 <= qual < WIDTH[m]:
        raise IndexError(f"{metric} has no slot {qual}")
    return int(BASE[m] + qual)


def cols(metric: str) -> slice:
    """All slots of a metric."""
    m = METRIC_ID[metric]
    return slice(int(BASE[m]), int(BASE[m] + WIDTH[m]))


class FeatureTable:
    """Newest value, sample time and rate interval per (port, column)."""

    def __init__(self) -> None:
        self.value = np.empty((0, N_COLS), np.float64, order="F")
        self.ts = np.empty((0, N_COLS), np.int64, order="F")
        self.dt = np.empty((0, N_COLS), np.float64, order="F")
        #: newest sample time of any metric, per port
        self.port_ts = np.empty(0, np.int64)
        self._mark = np.zeros(0, bool)  # scratch of apply: ports already listed

    @property
    def n_ports(self) -> int:
        return int(self.value.shape[0])

    def _grow(self, n: int) -> None:
        have = self.n_ports
        if n <= have:
            return
        rows = have + max(n - have, have // 2, 64)
        self.value = _column_major(self.value, rows, np.nan)
        self.ts = _column_major(self.ts, rows, -1)
        self.dt = _column_major(self.dt, rows, np.nan)
        self.port_ts = np.concatenate([self.port_ts, np.full(rows - have, -1, np.int64)])
        self._mark = np.zeros(rows, bool)

    def apply(self, frame: RateFrame) -> NDArray[np.int64]:
        """Store the newest row of each series; returns the port ids that got news (sorted)."""
        if len(frame) == 0:
            return np.empty(0, np.int64)
        self._grow(int(frame.port.max()) + 1)
        touched: NDArray[np.int64] = _store(
            frame.series, frame.port, frame.metric, frame.qual, frame.status, frame.rate,
            frame.value, frame.ts_ns, frame.dt_s, BASE, WIDTH, self.value, self.ts, self.dt,
            self.port_ts, self._mark)
        return touched

    def fresh_within(self, pids: NDArray[np.int64], column: int | slice, lo: NDArray[np.int64],
                     hi: NDArray[np.int64]) -> NDArray[np.float64]:
        """Values of a column for ports whose sample time is in ``[lo, hi]`` (per port, from
        :func:`window`); NaN where the companion is missing or stale."""
        first, width = (int(column.start), int(column.stop) - int(column.start)) if \
            isinstance(column, slice) else (int(column), 0)
        n = pids.shape[0]
        # laid out as numpy's gather and ``where`` laid out their answer (a run of ports as a
        # slice gave a column-major one), so that what detectors reduce over it adds in the
        # same order
        run = isinstance(_as_slice(pids), slice)
        out = np.empty((n, max(width, 1)), np.float64, order="F" if run and width > 1 else "C")
        _fresh(self.value, self.ts, pids, first, lo, hi, out)
        return out[:, 0].copy() if width == 0 else out


def window(ref_ts: NDArray[np.int64], slack_s: NDArray[np.float64]
           ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The sample times a companion may have, ``ref_ts ± slack_s``, as integer bounds (never
    below 0: a column with no sample holds -1)."""
    slack_ns = (slack_s * 1e9).astype(np.int64)
    return np.maximum(ref_ts - slack_ns, 0), ref_ts + slack_ns


def _column_major(arr: NDArray[S], rows: int, fill: float) -> NDArray[S]:
    """``arr`` grown to ``rows`` rows (the new ones ``fill``), stored column by column: detectors
    read a metric's column for many ports at once, and a column-major table serves it as one
    contiguous run instead of one cache line per port (3.6x faster for one column, 5x for a
    metric's 8 slots, at 80 k ports)."""
    out: NDArray[S] = np.full((rows, N_COLS), fill, arr.dtype, order="F")
    out[:arr.shape[0]] = arr
    return out


@njit(cache=True, nogil=True)
def _store(series: Any, port: Any, metric: Any, qual: Any, status: Any, rate: Any, value: Any,
           ts_ns: Any, dt_s: Any, base: Any, width: Any, tab_value: Any, tab_ts: Any,
           tab_dt: Any, port_ts: Any, mark: Any) -> Any:  # pragma: no cover
    """:meth:`FeatureTable.apply` in one compiled pass over the rows (grouped by series): the
    newest row of each series into its cell (a counter's rate, a gauge's value), every row's
    time into its port's newest time, and the ports seen, sorted."""
    n = series.shape[0]
    seen = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        p = port[i]
        port_ts[p] = max(port_ts[p], ts_ns[i])
        if not mark[p]:
            mark[p] = True
            seen[k] = p
            k += 1
        if i + 1 < n and series[i + 1] == series[i]:
            continue  # not the series' newest row
        m = metric[i]
        q = max(qual[i], 0)
        if q >= width[m]:
            continue
        c = base[m] + q
        tab_value[p, c] = value[i] if status[i] == _GAUGE else rate[i]
        tab_ts[p, c] = ts_ns[i]
        tab_dt[p, c] = dt_s[i]
    touched = np.sort(seen[:k])
    for j in range(k):
        mark[touched[j]] = False
    return touched


@njit(cache=True, nogil=True)
def _fresh(value: Any, ts: Any, rows: Any, first: Any, lo: Any, hi: Any,
           out: Any) -> None:  # pragma: no cover
    """:meth:`FeatureTable.fresh_within` in one pass: each cell of ``out`` the table's value
    where its sample time is within the row's ``[lo, hi]``, else NaN."""
    for i in range(rows.shape[0]):
        r = rows[i]
        a = lo[i]
        b = hi[i]
        for j in range(out.shape[1]):
            t = ts[r, first + j]
            out[i, j] = value[r, first + j] if a <= t <= b else np.nan


def _as_slice(pids: NDArray[np.int64]) -> NDArray[np.int64] | slice:
    """A run of consecutive port ids as a slice (a view instead of a gather: the usual case, every
    port of a switch or of the fabric got news), else the ids themselves."""
    n = pids.shape[0]
    if n > 1 and int(pids[-1]) - int(pids[0]) == n - 1 and bool((np.diff(pids) == 1).all()):
        return slice(int(pids[0]), int(pids[-1]) + 1)
    return pids


@dataclass(frozen=True)
class Frame:
    """What every detector observes in one step: the table, the ports, and who got news."""

    table: FeatureTable
    ports: PortIndex
    touched: NDArray[np.int64]
    now_ns: int
    #: :meth:`touched_of` answers, by kinds: most rules ask the same question of one frame
    _touched_of: dict[tuple[int, ...], NDArray[np.int64]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def touched_of(self, *kinds: int) -> NDArray[np.int64]:
        """Touched ports of the given :class:`~detectors.ports.PortKind` values (read-only: the
        array is shared by every rule that asks)."""
        got = self._touched_of.get(kinds)
        if got is None:
            t = self.touched
            got = t[np.isin(self.ports.kind[t], kinds)].astype(np.int64, copy=False)
            if got is t:
                got = t.copy()
            got.flags.writeable = False
            self._touched_of[kinds] = got
        return got
