"""A known stream of samples with faults on both sides of a partitioned deployment's split, and
what one process finds in it: the yardstick of the partitioned-detection tests (unit, memory bus;
and tests/cluster/test_detect_processes.py on the Kafka cluster).

Three spines, three leaves, two hosts per leaf, one sample a second of event time:

* leaf2's lossless thresholds are configured at 0.3 of its peers' from ``CONFIG_FROM`` on
  (``buffer_config_diff``: compared with the role's peers, on the correlator's side);
* spine2 pauses its neighbours without load over ``PAUSE`` (``pause_without_load``: its peers'
  pausing is the reference, on the correlator's side too);
* spine1:Ethernet2 receives corrupted frames over ``CORRUPT`` (``fcs_errors`` on one device, the
  ``faulty_link`` incident joins the link's two ends, which may sit on two workers).
"""

from __future__ import annotations

from pipeline.metrics import metric_id
from pipeline.model import Alert, BatchBuilder, SampleBatch
from pipeline.topology.model import Topology, spine_leaf
from tests.detectors.conftest import EPOCH, Feed

KB = 1024.0
HEALTHY = {"pfc_xoff_bytes": 400 * KB, "pfc_xon_bytes": 336 * KB, "pfc_headroom_bytes": 200 * KB}
TICKS = 44
CONFIG_EVERY = 4
CONFIG_FROM = 6
PAUSE = range(8, 18)
CORRUPT = range(26, 34)


def topology() -> Topology:
    return spine_leaf(3, 3, 2)


def config(t: float, device: str, scale: float) -> SampleBatch:
    b = BatchBuilder()
    ts = EPOCH + round(t * 1e9)
    for metric, value in HEALTHY.items():
        b.add(ts, device, "", metric_id(metric), 3, value * scale)
    b.add(ts, device, "", metric_id("ecn_kmin_bytes"), 3, 50 * KB)
    return b.build()


def ticks(topo: Topology, n: int = TICKS) -> list[list[SampleBatch]]:
    """The stream, one list of batches (one per switch, and the configuration) per tick."""
    feed = Feed(topo)
    calm_spine = {str(p): dict(feed.rates[str(p)]) for p in topo.ports("spine2")}
    pkts = feed.rates["spine1:Ethernet2"]["if_in_pkts"]
    out = []
    for k in range(n):
        if k == PAUSE.start:
            for port in topo.ports("spine2"):
                feed.set(str(port), pfc_tx_frames__3=20000.0, pfc_tx_pause_us__3=0.03e6)
        if k == PAUSE.stop:
            for port, rates in calm_spine.items():
                feed.rates[port] = dict(rates)
        if k == CORRUPT.start:
            feed.set("spine1:Ethernet2", if_in_fcs_errors=pkts * 1e-5)
        if k == CORRUPT.stop:
            feed.set("spine1:Ethernet2", if_in_fcs_errors=0.0)
        batches = feed.tick()
        if k % CONFIG_EVERY == 0:
            batches += [config(feed.t, sw, 0.3 if sw == "leaf2" and k >= CONFIG_FROM else 1.0)
                        for sw in topo.switches]
        out.append(batches)
    return out


def root_causes(alerts: list[Alert]) -> set[tuple[str, str, str]]:
    """The distinct root-cause incidents among alert changes: (kind, entity, fingerprint)."""
    return {(a.name, a.entity, a.fingerprint) for a in alerts if a.root_cause}


def firing_at_end(changes: list[Alert]) -> set[str]:
    """The root-cause incidents still firing after the last of the changes (fingerprints)."""
    last = {a.fingerprint: a for a in changes if a.root_cause}
    return {fp for fp, a in last.items() if a.ends_ns is None}


EXPECTED = {("buffer_misconfig", "leaf2"), ("buffer_misconfig", "spine2"),
            ("faulty_link", "leaf2~spine1")}
