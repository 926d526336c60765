"""The explicit "no data" state: a switch whose telemetry stopped, or whose collector says so.

Silence must never read as calm. A switch is in ``no_data`` when

* its collector reports the session down (``collector_up`` = 0) or delivering less than half of
  what it should (``collector_received`` < ``collector_expected`` / 2), for ``fire_after`` health
  samples; or
* nothing at all has arrived from it for ``silent_intervals`` of its own sample intervals, judged
  against the fabric's event-time watermark (the newest sample time seen from anyone): if every
  device goes quiet, event time stops too, and nobody is wrongly declared silent.

It clears when samples flow again and the collector is healthy. ``no_data`` is a state of the
telemetry, not a root cause in the fabric: it is published as an alert (severity warning) with
``root_cause`` false, so it is visible and routable without counting as a fabric incident, and the
detectors' symptoms for that switch are frozen, not resolved, while it lasts.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import Detector, DetectorOptions, Persistence, Symptoms
from detectors.features import Frame, col
from detectors.ports import PortKind
from pipeline.kinds import NO_DATA
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology


class NoDataOptions(DetectorOptions):
    silent_intervals: float = Field(3.0, gt=1)
    #: one good health sample is a whole interval the collector saw delivered: telemetry that is
    #: back clears at once (issue 10.1: within 2 intervals of the device resuming)
    clear_after: int = Field(1, ge=1, description="consecutive good health samples to clear")


class NoData(Detector):
    name = NO_DATA
    Options = NoDataOptions

    def __init__(self, instance: str, options: NoDataOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.health = Persistence(options.fire_after, options.clear_after)
        self.symptoms = Symptoms(self.name)
        self.last_health: dict[int, int] = {}
        self.silent: set[int] = set()

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        self._health(frame)
        self._silence(frame, now_ns)
        return self.symptoms.alerts()

    def _health(self, frame: Frame) -> None:
        tab, ports = frame.table, frame.ports
        rows = frame.touched[ports.kind[frame.touched] == PortKind.DEVICE]
        for pid in rows.tolist():
            ts = int(tab.ts[pid, col("collector_up")])
            if ts < 0 or ts <= self.last_health.get(pid, -1):
                continue
            self.last_health[pid] = ts
            up = tab.value[pid, col("collector_up")]
            expected = tab.value[pid, col("collector_expected")]
            received = tab.value[pid, col("collector_received")]
            short = np.isfinite(expected) and expected > 0 and np.isfinite(received) and \
                received < 0.5 * expected
            bad = bool(up == 0 or short)
            good = bool(up == 1 and not short)
            did = int(ports.device_id[pid])
            key = np.array([did], np.int64)
            self.health.step(key, np.array([bad]), np.array([good]), np.array([ts], np.int64))
            firing = self.health.is_firing(key)[0]
            self._show(frame, did, ts, firing or did in self.silent,
                       {"collector_up": float(up), "expected": float(expected),
                        "received": float(received)})

    def _silence(self, frame: Frame, now_ns: int) -> None:
        tab, ports = frame.table, frame.ports
        n = min(ports.n, tab.n_ports)
        if n == 0:
            return
        named = ports.kind[:n] != PortKind.DEVICE
        dev = ports.device_id[:n][named]
        last = np.full(int(ports.device_id.max()) + 1, -1, np.int64)
        np.maximum.at(last, dev, tab.port_ts[:n][named])
        dt = tab.dt[:n, col("if_in_octets")][named]
        cadence = np.zeros(last.shape[0])
        np.maximum.at(cadence, dev, np.nan_to_num(dt))
        known = (last >= 0) & (cadence > 0)
        quiet = known & (now_ns - last > self.opts.silent_intervals * cadence * 1e9)
        for did in np.flatnonzero(quiet).tolist():
            if did not in self.silent:
                self.silent.add(did)
                self._show(frame, did, now_ns, True,
                           {"silent_s": (now_ns - int(last[did])) / 1e9})
        for did in [d for d in self.silent if not quiet[d]]:
            self.silent.discard(did)
            firing = bool(self.health.is_firing(np.array([did], np.int64))[0])
            self._show(frame, did, now_ns, firing, {})

    def _show(self, frame: Frame, did: int, ts: int, on: bool,
              evidence: dict[str, float]) -> None:
        if not on:
            self.symptoms.clear(did)
            return
        if did in self.symptoms.active:
            self.symptoms.update(did, evidence, ts)
            return
        device = frame.ports.names.devices[did]
        self.symptoms.fire(did, name=NO_DATA, entity=device, ports=(), labels={"device": device},
                           evidence=evidence, onset_ns=ts, ts_ns=ts, severity=Severity.WARNING)
