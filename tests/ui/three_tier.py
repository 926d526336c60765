"""Test data of the read side on three tiers: two AI zones joined by two aggregation switches, and
a PFC storm whose pauses climb out of zone 1 over the aggregation tier into zone 2.

The fabric is ``FabricShape(spines=2, leaves=3, hosts_per_leaf=2, zones=2, aggs=2)``: 12
switches, 12 hosts. From ``fault_at`` host2's NIC stops draining: its leaf port pauses it
continuously (``pfc_watchdog``), and the pauses climb hop by hop, each hop's paused port counting
PFC frames received (``pfc_paused`` symptoms the incident explains):

    host2 ─ z1-leaf1 ─ z1-spine1 ─ agg1 ─ z2-spine1 ─ z2-leaf2

Separately, ``z2-leaf3~z2-spine2`` corrupts frames (a ``faulty_link`` incident), and
``z1-leaf3~z1-spine2`` is drained for maintenance by remediation's run ``run-7`` (its
``link_down`` restated as info, as detection restates a maintenance's consequences). Every port
reports octets, PFC frames on priority 3 and ECN marks every second; the rollup job has run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.kinds import FAULTY_LINK, LINK_DOWN, PFC_PAUSED, PFC_STORM, PFC_WATCHDOG
from pipeline.maintenance import Maintenance, record, restate
from pipeline.model import Alert, Severity
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.topology.model import Topology
from pipeline.topology.shape import FabricShape
from tests.ui.ui_fabric import NS, batch, now_s

SHAPE = FabricShape(spines=2, leaves=3, hosts_per_leaf=2, zones=2, aggs=2)
ROOT_HOST = "host2"
#: the tree's hops from the root outwards: (link or host, the paused switch)
CLIMB = (("host2", "z1-leaf1"), ("z1-leaf1~z1-spine1", "z1-spine1"),
         ("agg1~z1-spine1", "agg1"), ("agg1~z2-spine1", "z2-spine1"),
         ("z2-leaf2~z2-spine1", "z2-leaf2"))
CORRUPT = "z2-leaf3~z2-spine2"
DRAINED = "z1-leaf3~z1-spine2"
DRAIN_RUN = "run-7"
#: PFC frames/s the storm's paused ports receive; every other port sees about 2/s
STORM_PFC = 5_000.0


@dataclass
class StormFabric:
    topology: Topology
    start_ns: int
    end_ns: int
    fault_ns: int
    storm: Alert
    symptoms: list[Alert]
    corruption: Alert
    drained: Maintenance | None = None

    def paused_ports(self) -> list[str]:
        return paused_ports(self.topology)


def paused_ports(topo: Topology) -> list[str]:
    """The port of each hop that receives the pauses (on the paused switch's side)."""
    out = []
    for hop, paused in CLIMB:
        if hop == ROOT_HOST:
            out.append(str(topo.host_by_name[hop].port))
            continue
        link = topo.link_by_id[hop]
        out.append(str(link.a if link.a.device == paused else link.b))
    return out


def write_storm_fabric(store: Store, duration_s: int = 300, fault_after_s: int = 60) -> StormFabric:
    topo = SHAPE.build()
    end_ns = now_s()
    start_ns = end_ns - duration_s * NS
    fault_ns = start_ns + fault_after_s * NS
    ts = np.arange(start_ns, end_ns + 1, NS, dtype=np.int64)
    secs = (ts - start_ns) / NS
    storming = np.clip((ts - fault_ns) / NS, 0, None)
    made = StormFabric(topo, start_ns, end_ns, fault_ns, *_alerts(topo, fault_ns))
    paused = set(paused_ports(topo))
    corrupt = topo.link_by_id[CORRUPT]
    bad = {str(corrupt.a), str(corrupt.b)}
    rows = []
    for device in topo.switches:
        for k, port in enumerate(topo.ports(device)):
            label = str(port)
            octets = secs * (20.0 + 5 * k) * 1e9 / 8
            pfc = secs * 2 + (storming * STORM_PFC if label in paused else 0)
            errors = storming * 300 if label in bad else np.zeros(len(ts))
            rows += [
                (device, port.name, "if_in_octets", -1, ts, octets, 0),
                (device, port.name, "if_out_octets", -1, ts, octets * 0.5, 0),
                (device, port.name, "pfc_rx_frames", 3, ts, pfc, 0),
                (device, port.name, "pfc_tx_frames", 3, ts, secs, 0),
                (device, port.name, "queue_ecn_marked_pkts", 3, ts, secs * 10, 0),
                (device, port.name, "if_in_fcs_errors", -1, ts, errors, 0),
            ]
    store.insert_samples(batch(rows))
    RollupJob(store, store.settings).run_once()
    store.insert_alerts([*made.symptoms, made.storm, made.corruption])
    made.drained = _drain(store, topo, fault_ns + 30 * NS)
    return made


def _drain(store: Store, topo: Topology, since_ns: int) -> Maintenance:
    """The maintenance record remediation publishes for a drained link, and the link's
    ``link_down`` as detection restates it."""
    link = topo.link_by_id[DRAINED]
    held = Maintenance(target=DRAINED, kind="link", ports=(str(link.a), str(link.b)),
                       state="held", origin="runbook", by="faulty_link", run=DRAIN_RUN,
                       since_ns=since_ns, held_since_ns=since_ns, phase="drained",
                       reason="corrupting", at_ns=since_ns + NS)
    store.insert_actions([record(held)])
    down = Alert(name=LINK_DOWN, entity=DRAINED, severity=Severity.CRITICAL,
                 ports=held.ports, starts_ns=since_ns + 2 * NS, updated_ns=since_ns + 2 * NS,
                 source="correlator")
    store.insert_alerts([restate(down, held)])
    return held


def _alerts(topo: Topology, fault_ns: int) -> tuple[Alert, list[Alert], Alert]:
    ports = paused_ports(topo)
    storm = Alert(name=PFC_STORM, entity=ROOT_HOST, severity=Severity.CRITICAL,
                  ports=(ports[0],), starts_ns=fault_ns + 3 * NS, updated_ns=fault_ns + 3 * NS,
                  confidence=0.95, source="correlator",
                  annotations={"summary": f"{ROOT_HOST} pauses {ports[0]} continuously"})
    symptoms = [
        Alert(name=PFC_WATCHDOG if i == 0 else PFC_PAUSED, entity=port,
              severity=Severity.CRITICAL if i == 0 else Severity.WARNING, ports=(port,),
              root_cause=False, inhibited_by=storm.fingerprint, starts_ns=fault_ns + (2 + i) * NS,
              updated_ns=fault_ns + (2 + i) * NS, source="ports",
              evidence={"pause_share": 0.9})
        for i, port in enumerate(ports)
    ]
    storm = storm.model_copy(update={"explains": tuple(s.fingerprint for s in symptoms)})
    link = topo.link_by_id[CORRUPT]
    corruption = Alert(name=FAULTY_LINK, entity=CORRUPT, severity=Severity.CRITICAL,
                       ports=(str(link.a), str(link.b)), starts_ns=fault_ns + 4 * NS,
                       updated_ns=fault_ns + 4 * NS, source="correlator",
                       annotations={"summary": f"{CORRUPT} corrupts frames"})
    return storm, symptoms, corruption
