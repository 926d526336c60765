"""Test data of the read side: samples, alerts and actions of a small fabric with one faulty link.

The fabric is ``spine_leaf(2, 4, 2)``; from ``fault_at`` the link ``leaf3~spine2`` corrupts frames
(both ends count FCS errors), the correlator's incident ``faulty_link`` on it explains two
``fcs_errors`` symptoms, a ``pfc_storm`` on ``host1`` fired and resolved earlier, and remediation
recorded a dry-run drain and a notification. Times are relative to the wall clock (chDB's TTL
drops rows older than the retention at insert time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pipeline.metrics import METRIC_ID
from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.topology.model import Topology, spine_leaf

NS = 1_000_000_000
FAULTY_LINK = "leaf3~spine2"


def batch(rows: Sequence[tuple[str, str, str, int, np.ndarray, np.ndarray, int]]) -> SampleBatch:
    """One batch from ``(device, port, metric, qual, ts_ns[], values[], flags)`` series."""
    devices: dict[str, int] = {}
    ports: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("ts", "dev", "port", "metric", "qual", "value", "flags")}
    for device, port, metric, qual, ts, values, flags in rows:
        n = len(ts)
        cols["ts"].append(np.asarray(ts, dtype=np.int64))
        cols["dev"].append(np.full(n, devices.setdefault(device, len(devices)), np.int32))
        cols["port"].append(np.full(n, ports.setdefault(port, len(ports)), np.int32))
        cols["metric"].append(np.full(n, METRIC_ID[metric], np.uint16))
        cols["qual"].append(np.full(n, qual, np.int16))
        cols["value"].append(np.asarray(values, dtype=np.float64))
        cols["flags"].append(np.broadcast_to(np.asarray(flags, np.uint8), (n,)).copy())
    return SampleBatch(
        np.concatenate(cols["ts"]), np.concatenate(cols["dev"]), np.concatenate(cols["port"]),
        np.concatenate(cols["metric"]), np.concatenate(cols["qual"]),
        np.concatenate(cols["value"]), np.concatenate(cols["flags"]),
        tuple(devices), tuple(ports)).validate()


def now_s() -> int:
    """The wall clock rounded down to a whole second, in ns."""
    return time.time_ns() // NS * NS


@dataclass
class FaultyFabric:
    topology: Topology
    start_ns: int
    end_ns: int
    fault_ns: int
    incident: Alert
    symptoms: list[Alert]
    resolved: Alert
    actions: list[ActionResult] = field(default_factory=list)

    @property
    def faulty_ports(self) -> list[str]:
        link = self.topology.link_by_id[FAULTY_LINK]
        return [str(link.a), str(link.b)]


def write_fabric(store: Store, end_ns: int | None = None, duration_s: int = 300,
                 fault_after_s: int = 200, interval_s: int = 1) -> FaultyFabric:
    """Write the faulty fabric's telemetry, alerts and actions; returns what was written."""
    topo = spine_leaf(2, 4, 2)
    end_ns = end_ns or now_s()
    start_ns = end_ns - duration_s * NS
    fault_ns = start_ns + fault_after_s * NS
    ts = np.arange(start_ns, end_ns + 1, interval_s * NS, dtype=np.int64)
    secs = (ts - start_ns) / NS
    after = np.clip((ts - fault_ns) / NS, 0, None)
    link = topo.link_by_id[FAULTY_LINK]
    bad = {(link.a.device, link.a.name), (link.b.device, link.b.name)}
    rows = []
    for device in topo.switches:
        for k, port in enumerate(topo.ports(device)):
            gbps = 40.0 + 10 * k
            octets = secs * gbps * 1e9 / 8
            rows += [
                (device, port.name, "if_in_octets", -1, ts, octets, 0),
                (device, port.name, "if_out_octets", -1, ts, octets * 0.9, 0),
                (device, port.name, "pfc_rx_frames", 3, ts, secs * 2, 0),
                (device, port.name, "pfc_tx_frames", 3, ts, secs * 1, 0),
                (device, port.name, "queue_ecn_marked_pkts", 3, ts, secs * 5, 0),
                (device, port.name, "queue_occupancy_bytes", 3, ts, 1000 + secs % 7, 0),
                (device, port.name, "if_in_fcs_errors", -1, ts,
                 after * 500 if (device, port.name) in bad else np.zeros(len(ts)), 0),
            ]
    store.insert_samples(batch(rows))
    RollupJob(store, store.settings).run_once()

    incident = Alert(
        name="faulty_link", entity=FAULTY_LINK, severity=Severity.CRITICAL,
        ports=(str(link.a), str(link.b)), starts_ns=fault_ns + 3 * NS,
        updated_ns=fault_ns + 3 * NS, confidence=0.97, source="correlator",
        annotations={"summary": f"{FAULTY_LINK} corrupts frames: both ends count FCS errors"},
        evidence={"fcs_errors_per_s": 500.0})
    symptoms = [
        Alert(name="fcs_errors", entity=str(port), severity=Severity.CRITICAL, ports=(str(port),),
              root_cause=False, inhibited_by=incident.fingerprint, starts_ns=fault_ns + 2 * NS,
              updated_ns=fault_ns + 2 * NS, source="ports", evidence={"rate": 500.0})
        for port in (link.a, link.b)
    ]
    incident = incident.model_copy(update={
        "explains": tuple(s.fingerprint for s in symptoms), "updated_ns": fault_ns + 5 * NS})
    host1 = topo.host_by_name["host1"]
    storm = Alert(name="pfc_storm", entity="host1", severity=Severity.CRITICAL,
                  ports=(str(host1.port),), starts_ns=start_ns + 20 * NS,
                  updated_ns=start_ns + 20 * NS, source="correlator")
    resolved = storm.model_copy(update={"updated_ns": start_ns + 60 * NS,
                                        "ends_ns": start_ns + 60 * NS})
    store.insert_alerts([storm, resolved, *symptoms, incident])
    actions = [
        ActionResult(action="notify", target=FAULTY_LINK, alert_fingerprint=incident.fingerprint,
                     alert_name="faulty_link", mode="auto", outcome="done",
                     detail="webhook: 200", at_ns=fault_ns + 6 * NS),
        ActionResult(action="drain", target=FAULTY_LINK, alert_fingerprint=incident.fingerprint,
                     alert_name="faulty_link", mode="dry_run", outcome="done",
                     detail="dry run: would drain leaf3~spine2 (capacity ok: 1 of 2 uplinks)",
                     steps=({"step": "capacity", "ok": True},), at_ns=fault_ns + 8 * NS),
    ]
    store.insert_actions(actions)
    return FaultyFabric(topo, start_ns, end_ns, fault_ns, incident, symptoms, resolved, actions)
