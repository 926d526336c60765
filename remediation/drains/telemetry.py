"""What runbooks need to know from telemetry: is a port up, how much traffic crosses it, and did
its error counters move.

The router feeds every sample batch from its own consumer group on the samples topic. Status
gauges (oper and admin status) are kept for every port, because the capacity guard must know
which fabric links are down already. Traffic and error counters are kept only for *watched* ports
(the ports of a runbook in flight), so the cost stays proportional to what is being acted on, not
to the fabric's size.

Everything is in columns: per-port state lives in arrays indexed by a port id, and counters go
through the platform's one rate rule (:class:`pipeline.rates.state.RateState`), so the residual
traffic a drain verifies is the rate the detectors and the API show for the same samples: no rate
across a reset or a gap (the direction is then unknown until the next good interval), Counter32
wraps unwrapped. Error counters add up the increase of every interval (across a reset, the counts
since the restart), so "errors since the soak began" is a subtraction that survives resets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from pipeline.metrics import CATALOG, metric_id
from pipeline.model import SampleBatch
from pipeline.rates.state import RateState
from pipeline.topology.model import Port

UP, DOWN = 1, 2
_OPER, _ADMIN = metric_id("if_oper_status"), metric_id("if_admin_status")
#: counters kept for watched ports: octets by direction, then the error counters
_COUNTERS = ("if_out_octets", "if_in_octets", "if_in_fcs_errors", "if_in_symbol_errors",
             "fec_uncorrectable_blocks", "if_carrier_transitions")
_DIRECTIONS = 2  # the first counters: out, in
_SLOT = np.full(len(CATALOG), -1, np.int64)
_SLOT[[metric_id(name) for name in _COUNTERS]] = np.arange(len(_COUNTERS))
_STATUS_CODES = np.array([_OPER, _ADMIN], dtype=np.uint16)
_WATCHED_CODES = np.array(sorted({_OPER, _ADMIN, *(metric_id(n) for n in _COUNTERS)}),
                          dtype=np.uint16)


_T = TypeVar("_T", bound=np.generic)


def _extend(a: NDArray[_T], rows: int, fill: float) -> NDArray[_T]:
    """``a`` with ``rows`` more rows of ``fill``."""
    return np.concatenate([a, np.full((rows, *a.shape[1:]), fill, a.dtype)])


class LinkTelemetry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: dict[Port, int] = {}
        self._ports: list[Port] = []
        self._watched: NDArray[np.bool_] = np.zeros(0, bool)
        #: per port: oper and admin status (0: never seen), the newest status time
        self._status: NDArray[np.int64] = np.zeros((0, 2), np.int64)
        self._status_ns: NDArray[np.int64] = np.zeros(0, np.int64)
        #: per watched port: status samples seen and the newest sample time of any kind
        self._samples: NDArray[np.int64] = np.zeros(0, np.int64)
        self._last_ns: NDArray[np.int64] = np.zeros(0, np.int64)
        #: per port and direction: bytes/s over the newest interval (NaN: none), its end
        self._rate: NDArray[np.float64] = np.zeros((0, _DIRECTIONS), np.float64)
        self._rate_ns: NDArray[np.int64] = np.zeros((0, _DIRECTIONS), np.int64)
        #: per port: error-counter increments summed since it was first watched
        self._errors: NDArray[np.float64] = np.zeros(0, np.float64)
        self._rates = RateState()

    # -- what to keep --------------------------------------------------------------------------

    def watch(self, ports: Iterable[Port]) -> None:
        with self._lock:
            for port in ports:
                pid = self._id(port)  # first: it may grow the arrays
                self._watched[pid] = True

    def unwatch(self, ports: Iterable[Port]) -> None:
        with self._lock:
            for port in ports:
                pid = self._ids.get(port)
                if pid is not None:
                    self._watched[pid] = False

    def _id(self, port: Port) -> int:
        pid = self._ids.get(port)
        if pid is None:
            pid = self._ids[port] = len(self._ports)
            self._ports.append(port)
            if pid >= self._watched.shape[0]:
                self._grow(pid + 1)
        return pid

    def _grow(self, n: int) -> None:
        k = max(n - self._watched.shape[0], self._watched.shape[0] // 2, 64)
        self._watched = _extend(self._watched, k, False)
        self._status, self._status_ns = _extend(self._status, k, 0), _extend(self._status_ns, k, 0)
        self._samples, self._last_ns = _extend(self._samples, k, 0), _extend(self._last_ns, k, 0)
        self._rate, self._rate_ns = _extend(self._rate, k, np.nan), _extend(self._rate_ns, k, 0)
        self._errors = _extend(self._errors, k, 0.0)

    # -- input ---------------------------------------------------------------------------------

    def observe(self, batch: SampleBatch) -> None:
        if not len(batch):
            return
        with self._lock:
            codes = _WATCHED_CODES if self._watched.any() else _STATUS_CODES
            rows = np.flatnonzero(np.isin(batch.metric, codes))
            if not rows.size:
                return
            pid = self._row_ids(batch, rows)
            metric = batch.metric[rows]
            status = (metric == _OPER) | (metric == _ADMIN)
            self._observe_status(pid[status], (metric[status] == _ADMIN).astype(np.int64),
                                 batch.ts_ns[rows[status]], batch.value[rows[status]])
            counter = ~status & self._watched[pid]
            if counter.any():
                self._observe_counters(batch.take(rows[counter]), pid[counter])

    def _row_ids(self, batch: SampleBatch, rows: NDArray[np.intp]) -> NDArray[np.int64]:
        """The port id of each selected row (new ports get one): one lookup per distinct
        device × port pair of the batch, not per row."""
        pair = (batch.device[rows].astype(np.int64) << 32) | batch.port[rows].astype(np.int64)
        uniq, inverse = np.unique(pair, return_inverse=True)
        ids = np.fromiter((self._id(Port(batch.devices[int(u >> 32)],
                                         batch.ports[int(u & 0xFFFFFFFF)])) for u in uniq),
                          np.int64, len(uniq))
        return ids[inverse]

    def _observe_status(self, pid: NDArray[np.int64], which: NDArray[np.int64],
                        ts: NDArray[np.int64], value: NDArray[np.float64]) -> None:
        if not pid.size:
            return
        # a status older than the port's newest is news only where nothing is known yet
        fresh = (ts >= self._status_ns[pid]) | (self._status[pid, which] == 0)
        pid, which, ts, value = pid[fresh], which[fresh], ts[fresh], value[fresh]
        if not pid.size:
            return
        order = np.lexsort((ts, which, pid))
        p, w = pid[order], which[order]
        newest = np.r_[(p[1:] != p[:-1]) | (w[1:] != w[:-1]), True]  # of each (port, which)
        self._status[p[newest], w[newest]] = value[order][newest].astype(np.int64)
        np.maximum.at(self._status_ns, pid, ts)
        watched = self._watched[pid]
        np.add.at(self._samples, pid[watched], 1)
        np.maximum.at(self._last_ns, pid[watched], ts[watched])

    def _observe_counters(self, batch: SampleBatch, pid: NDArray[np.int64]) -> None:
        np.maximum.at(self._last_ns, pid, batch.ts_ns)
        slot = _SLOT[batch.metric.astype(np.int64)]
        frame = self._rates.update(batch, pid * len(_COUNTERS) + slot, pid)
        if not len(frame):
            return
        slot = frame.series % len(_COUNTERS)
        errors = slot >= _DIRECTIONS
        np.add.at(self._errors, frame.port[errors], np.nan_to_num(frame.increase[errors]))
        # the newest interval of each direction's series says the traffic (rows: series, time)
        newest = np.r_[frame.series[1:] != frame.series[:-1], True] & ~errors
        p, d = frame.port[newest], slot[newest]
        self._rate[p, d] = frame.rate[newest]
        self._rate_ns[p, d] = frame.ts_ns[newest]

    # -- questions -----------------------------------------------------------------------------

    def status(self, port: Port) -> tuple[int, int]:
        """``(oper, admin)`` as last seen (0: never seen)."""
        with self._lock:
            pid = self._ids.get(port)
            return (0, 0) if pid is None else (int(self._status[pid, 0]),
                                               int(self._status[pid, 1]))

    def down_ports(self) -> set[Port]:
        with self._lock:
            n = len(self._ports)
            down = np.flatnonzero((self._status[:n] == DOWN).any(axis=1))
            return {self._ports[i] for i in down}

    def gbps(self, port: Port) -> tuple[int, float] | None:
        """``(ts, Gbit/s)``: the larger of in/out traffic over each direction's newest interval,
        stamped with the older of the two intervals' ends (None while no direction has a rate:
        before two samples, and after a reset or a gap until the next good interval)."""
        with self._lock:
            pid = self._ids.get(port)
            if pid is None:
                return None
            known = ~np.isnan(self._rate[pid])
            if not known.any():
                return None
            return (int(self._rate_ns[pid][known].min()),
                    float(self._rate[pid][known].max()) * 8 / 1e9)

    def error_total(self, port: Port) -> float:
        """Error-counter increments summed since the port was first watched."""
        with self._lock:
            pid = self._ids.get(port)
            return 0.0 if pid is None else float(self._errors[pid])

    def samples(self, port: Port) -> tuple[int, int]:
        """``(count, newest ts)`` of samples seen for a watched port."""
        with self._lock:
            pid = self._ids.get(port)
            return (0, 0) if pid is None else (int(self._samples[pid]), int(self._last_ns[pid]))
