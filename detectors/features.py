"""The latest rate or gauge value of every port's metrics, and the frame detectors observe.

:class:`FeatureTable` is a matrix ``ports × columns``: one column per unqualified catalog metric,
eight per qualified one (PFC priority or queue 0..7). Each cell holds the newest per-second rate of
a counter (NaN when that sample had no usable rate: first, gap or reset) or the newest gauge value,
with the event time of that sample and the interval the rate spans. Different metrics of a port may
arrive in different messages; a detector evaluates a port when its driving metric has a new sample
and reads the companions it needs if they are fresh (within one cadence of the driver).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from detectors.ports import PortIndex
from pipeline.metrics import CATALOG, METRIC_ID
from pipeline.rates.rule import Status
from pipeline.rates.state import RateFrame

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
        self.value = np.empty((0, N_COLS), np.float64)
        self.ts = np.empty((0, N_COLS), np.int64)
        self.dt = np.empty((0, N_COLS), np.float64)
        #: newest sample time of any metric, per port
        self.port_ts = np.empty(0, np.int64)

    @property
    def n_ports(self) -> int:
        return int(self.value.shape[0])

    def _grow(self, n: int) -> None:
        have = self.n_ports
        if n <= have:
            return
        extra = max(n - have, have // 2, 64)
        self.value = np.vstack([self.value, np.full((extra, N_COLS), np.nan)])
        self.ts = np.vstack([self.ts, np.full((extra, N_COLS), -1, np.int64)])
        self.dt = np.vstack([self.dt, np.full((extra, N_COLS), np.nan)])
        self.port_ts = np.concatenate([self.port_ts, np.full(extra, -1, np.int64)])

    def apply(self, frame: RateFrame) -> NDArray[np.int64]:
        """Store the newest row of each series; returns the port ids that got news."""
        if len(frame) == 0:
            return np.empty(0, np.int64)
        self._grow(int(frame.port.max()) + 1)
        qual = np.maximum(frame.qual, 0)
        ok = qual < WIDTH[frame.metric]
        newest = np.r_[frame.series[1:] != frame.series[:-1], True] & ok
        p = frame.port[newest]
        c = BASE[frame.metric[newest]] + qual[newest]
        is_rate = frame.status[newest] != Status.GAUGE  # counters: the rate, else the value
        self.value[p, c] = np.where(is_rate, frame.rate[newest], frame.value[newest])
        self.ts[p, c] = frame.ts_ns[newest]
        self.dt[p, c] = frame.dt_s[newest]
        np.maximum.at(self.port_ts, frame.port, frame.ts_ns)
        return np.unique(frame.port)

    def fresh(self, pids: NDArray[np.int64], column: int | slice, ref_ts: NDArray[np.int64],
              slack_s: NDArray[np.float64]) -> NDArray[np.float64]:
        """Values of a column for ports whose sample is within ``slack_s`` of ``ref_ts``; NaN
        where the companion is missing or stale."""
        rows = _as_slice(pids)
        v = self.value[rows, column]
        t = self.ts[rows, column]
        if v.ndim == 2:
            ref = ref_ts[:, None]
            slack = slack_s[:, None]
        else:
            ref, slack = ref_ts, slack_s
        ok = (t >= 0) & (np.abs(t - ref) <= slack * 1e9)
        return np.where(ok, v, np.nan)


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

    def touched_of(self, *kinds: int) -> NDArray[np.int64]:
        """Touched ports of the given :class:`~detectors.ports.PortKind` values."""
        t = self.touched
        return t[np.isin(self.ports.kind[t], kinds)].astype(np.int64, copy=False)
