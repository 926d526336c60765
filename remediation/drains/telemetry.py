"""What runbooks need to know from telemetry: is a port up, how much traffic crosses it, and did
its error counters move.

The router feeds every sample batch from its own consumer group on the samples topic. Status
gauges (oper and admin status) are kept for every port, because the capacity guard must know
which fabric links are down already. Traffic and error counters are kept only for *watched* ports
(the ports of a runbook in flight), so the cost stays proportional to what is being acted on, not
to the fabric's size.

Counter increments are summed as they arrive (a decrease is a counter reset: the new value is the
increment), so "errors since the soak began" is a subtraction that survives resets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from pipeline.metrics import metric_id
from pipeline.model import FLAG_RESET, SampleBatch
from pipeline.topology.model import Port

UP, DOWN = 1, 2
STATUS = {metric_id("if_oper_status"): "oper", metric_id("if_admin_status"): "admin"}
OCTETS = {metric_id("if_out_octets"): "out", metric_id("if_in_octets"): "in"}
ERRORS = {metric_id(name): name for name in (
    "if_in_fcs_errors", "if_in_symbol_errors", "fec_uncorrectable_blocks",
    "if_carrier_transitions")}
_STATUS_CODES = np.array(sorted(STATUS), dtype=np.uint16)
_WATCHED_CODES = np.array(sorted({*STATUS, *OCTETS, *ERRORS}), dtype=np.uint16)


@dataclass
class PortState:
    oper: int = 0
    admin: int = 0
    status_ns: int = 0
    #: direction → (ts_ns, cumulative octets) of the last sample
    octets: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: direction → (ts_ns, Gbit/s over the last interval); absent until two samples
    gbps: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: error metric → (last raw value, increments summed since we started watching)
    errors: dict[str, tuple[float, float]] = field(default_factory=dict)
    samples: int = 0
    last_ns: int = 0


class LinkTelemetry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ports: dict[Port, PortState] = {}
        self._watched: set[Port] = set()

    # -- what to keep --------------------------------------------------------------------------

    def watch(self, ports: Iterable[Port]) -> None:
        with self._lock:
            self._watched.update(ports)

    def unwatch(self, ports: Iterable[Port]) -> None:
        with self._lock:
            for port in ports:
                self._watched.discard(port)

    # -- input ---------------------------------------------------------------------------------

    def observe(self, batch: SampleBatch) -> None:
        if not len(batch):
            return
        with self._lock:
            codes = _WATCHED_CODES if self._watched else _STATUS_CODES
            rows = np.nonzero(np.isin(batch.metric, codes))[0]
            if not rows.size:
                return
            cols = zip(batch.ts_ns[rows].tolist(), batch.device[rows].tolist(),
                       batch.port[rows].tolist(), batch.metric[rows].tolist(),
                       batch.value[rows].tolist(), batch.flags[rows].tolist(), strict=True)
            for ts, dev, prt, code, value, flags in cols:
                port = Port(batch.devices[dev], batch.ports[prt])
                if code in STATUS:
                    self._status(port, STATUS[code], ts, int(value))
                elif port in self._watched:
                    self._counter(port, code, ts, value, bool(flags & FLAG_RESET))

    def _state(self, port: Port) -> PortState:
        state = self._ports.get(port)
        if state is None:
            state = self._ports[port] = PortState()
        return state

    def _status(self, port: Port, which: str, ts: int, value: int) -> None:
        state = self._state(port)
        if ts < state.status_ns and getattr(state, which):
            return
        setattr(state, which, value)
        state.status_ns = max(state.status_ns, ts)
        if port in self._watched:
            state.samples += 1
            state.last_ns = max(state.last_ns, ts)

    def _counter(self, port: Port, code: int, ts: int, value: float, reset: bool) -> None:
        state = self._state(port)
        state.last_ns = max(state.last_ns, ts)
        if code in OCTETS:
            direction = OCTETS[code]
            prev = state.octets.get(direction)
            state.octets[direction] = (ts, value)
            if prev is None or ts <= prev[0]:
                return
            if reset or value < prev[1]:
                state.gbps.pop(direction, None)  # unknown across a reset
                return
            state.gbps[direction] = (ts, (value - prev[1]) * 8 / (ts - prev[0]))  # bits/ns = Gbps
            return
        name = ERRORS[code]
        last = state.errors.get(name)
        if last is None:
            state.errors[name] = (value, 0.0)
            return
        step = value if (reset or value < last[0]) else value - last[0]
        state.errors[name] = (value, last[1] + step)

    # -- questions -----------------------------------------------------------------------------

    def status(self, port: Port) -> tuple[int, int]:
        """``(oper, admin)`` as last seen (0: never seen)."""
        with self._lock:
            state = self._ports.get(port)
            return (state.oper, state.admin) if state else (0, 0)

    def down_ports(self) -> set[Port]:
        with self._lock:
            return {p for p, s in self._ports.items() if DOWN in (s.oper, s.admin)}

    def gbps(self, port: Port) -> tuple[int, float] | None:
        """``(ts, Gbit/s)``: the larger of in/out traffic over each direction's last interval,
        stamped with the older of the two intervals' ends (None before two samples)."""
        with self._lock:
            state = self._ports.get(port)
            if state is None or not state.gbps:
                return None
            return (min(ts for ts, _ in state.gbps.values()),
                    max(r for _, r in state.gbps.values()))

    def error_total(self, port: Port) -> float:
        """Error-counter increments summed since the port was first watched."""
        with self._lock:
            state = self._ports.get(port)
            return sum(inc for _, inc in state.errors.values()) if state else 0.0

    def samples(self, port: Port) -> tuple[int, int]:
        """``(count, newest ts)`` of samples seen for a watched port."""
        with self._lock:
            state = self._ports.get(port)
            return (state.samples, state.last_ns) if state else (0, 0)
