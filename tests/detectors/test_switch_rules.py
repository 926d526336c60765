"""Per-switch detectors: uplink imbalance, buffer misconfiguration, no data."""

from __future__ import annotations

import numpy as np

from pipeline.metrics import metric_id
from pipeline.model import SampleBatch
from pipeline.topology import spine_leaf
from tests.detectors.conftest import EPOCH, Feed, active, at_s, chain_of, run


def test_collision_onto_one_uplink_after_a_balanced_baseline():
    topo = spine_leaf(4, 2, 4)  # leaf uplinks Ethernet5..8
    feed = Feed(topo)
    chain = chain_of(topo, "ecmp_imbalance")
    for k in range(5, 9):
        feed.load(f"leaf1:Ethernet{k}", 0.5)
    run(chain, feed, 15)
    for k in range(5, 8):
        feed.load(f"leaf1:Ethernet{k}", 0.05)
    feed.load("leaf1:Ethernet8", 1.0)
    feed.set("leaf1:Ethernet1", pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.4e6)
    run(chain, feed, 4)
    assert not active(chain)
    run(chain, feed, 1)
    incident = active(chain)[("ecmp_imbalance", "leaf1")]
    assert incident.root_cause and incident.ports == ("leaf1:Ethernet8",)


def test_a_leaf_that_was_always_uneven_is_its_own_baseline():
    topo = spine_leaf(4, 2, 4)
    feed = Feed(topo)
    chain = chain_of(topo, "ecmp_imbalance")
    feed.load("leaf1:Ethernet5", 1.0)
    feed.load("leaf1:Ethernet6", 1.0)
    feed.load("leaf1:Ethernet7", 0.0)
    feed.load("leaf1:Ethernet8", 0.0)
    feed.set("leaf1:Ethernet1", pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.2e6)
    run(chain, feed, 40)
    assert not active(chain)


def test_buffer_misconfig_is_a_switch_pausing_unlike_its_peers():
    topo = spine_leaf(3, 3, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_misconfig")
    run(chain, feed, 3)
    for port in topo.ports("spine2"):
        feed.set(str(port), pfc_tx_frames__3=20000.0, pfc_tx_pause_us__3=0.03e6)
    run(chain, feed, 2)
    assert not active(chain)
    run(chain, feed, 1)
    incident = active(chain)[("buffer_misconfig", "spine2")]
    assert incident.root_cause and len(incident.ports) == 3


def test_pausing_behind_a_standing_queue_is_congestion_not_misconfig():
    topo = spine_leaf(3, 3, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_misconfig", "congestion")
    for port in topo.ports("spine2"):
        feed.set(str(port), pfc_tx_frames__3=20000.0, pfc_tx_pause_us__3=0.03e6)
    feed.set("spine2:Ethernet3", queue_ecn_marked_pkts__3=100000.0)  # ~3 % marked
    run(chain, feed, 6)
    assert not any(a.root_cause for a in active(chain).values())


def health(t: float, device: str, up: float, expected: float, received: float) -> SampleBatch:
    n = 3
    return SampleBatch(
        np.full(n, EPOCH + round(t * 1e9), np.int64), np.zeros(n, np.int32),
        np.zeros(n, np.int32),
        np.array([metric_id("collector_up"), metric_id("collector_expected"),
                  metric_id("collector_received")], np.uint16),
        np.full(n, -1, np.int16), np.array([up, expected, received]), np.zeros(n, np.uint8),
        (device,), ("",))


def test_collector_down_is_an_explicit_no_data_state(topo, feed):
    chain = chain_of(topo, "no_data")
    for t in (1.0, 2.0, 3.0):
        chain.observe([*feed.tick(), health(t, "leaf2", 1, 100, 100)])
    assert not active(chain)
    chain.observe([*feed.tick(), health(4.0, "leaf2", 0, 100, 0)])
    chain.observe([*feed.tick(), health(5.0, "leaf2", 0, 100, 0)])
    state = active(chain)[("no_data", "leaf2")]
    assert not state.root_cause and state.severity.value == "warning"
    for t in (6.0, 7.0, 8.0):
        chain.observe([*feed.tick(), health(t, "leaf2", 1, 100, 100)])
    assert not active(chain)


def test_a_silent_switch_is_no_data_on_event_time(topo, feed):
    chain = chain_of(topo, "no_data")
    run(chain, feed, 3)
    for _ in range(5):
        chain.observe([b for b in feed.tick() if b.devices != ("leaf1",)])
    state = active(chain)[("no_data", "leaf1")]
    assert state.evidence["silent_s"] > 3.0
    assert at_s(state.updated_at_ns) <= 8.0
    run(chain, feed, 1)
    assert not active(chain)
