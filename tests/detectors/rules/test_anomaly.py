"""The learned detector: a port unlike its own baseline, explained, never on one sample."""

from __future__ import annotations

from detectors.rules.anomaly import Anomaly
from pipeline.topology.model import spine_leaf
from tests.detectors.conftest import Feed, active, chain_of, run


def test_learns_each_port_then_flags_a_sustained_deviation_with_its_features():
    topo = spine_leaf(2, 4, 4)
    feed = Feed(topo, jitter=0.03)
    chain = chain_of(topo, "anomaly")
    det = next(d for d in chain.detectors if isinstance(d, Anomaly))
    run(chain, feed, det.opts.baseline + 2)
    assert det.model is not None  # trained on every port's baseline
    feed.set("leaf2:Ethernet6", pfc_rx_frames__3=20000.0, pfc_rx_pause_us__3=0.8e6)
    feed.load("leaf2:Ethernet6", 0.02)
    run(chain, feed, det.opts.fire_after - 1)
    assert ("anomaly", "leaf2:Ethernet6") not in active(chain)  # never on too few samples
    run(chain, feed, 1)
    alert = active(chain)[("anomaly", "leaf2:Ethernet6")]
    assert not alert.root_cause  # a learned score is evidence, not a root cause
    assert "pause_rx" in alert.annotations["features"]
    assert abs(alert.evidence["z_pause_rx"]) > abs(alert.evidence["z_corruption_log"])


def test_a_single_odd_sample_never_fires():
    topo = spine_leaf(2, 4, 4)
    feed = Feed(topo, jitter=0.03)
    chain = chain_of(topo, "anomaly")
    det = next(d for d in chain.detectors if isinstance(d, Anomaly))
    run(chain, feed, det.opts.baseline + 2)
    feed.load("leaf1:Ethernet5", 0.95)
    run(chain, feed, 1)
    feed.load("leaf1:Ethernet5", 0.3)
    run(chain, feed, 6)
    assert not active(chain)
