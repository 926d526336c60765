"""Uplink imbalance: a leaf's ECMP group collapsing onto one member after a learned baseline."""

from __future__ import annotations

from pipeline.topology.model import spine_leaf
from tests.detectors.conftest import Feed, active, chain_of, run


def test_collision_onto_one_uplink_after_a_balanced_baseline():
    topo = spine_leaf(4, 2, 4)  # leaf uplinks Ethernet5..8
    feed = Feed(topo)
    chain = chain_of(topo, "uplink_imbalance")
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
    chain = chain_of(topo, "uplink_imbalance")
    feed.load("leaf1:Ethernet5", 1.0)
    feed.load("leaf1:Ethernet6", 1.0)
    feed.load("leaf1:Ethernet7", 0.0)
    feed.load("leaf1:Ethernet8", 0.0)
    feed.set("leaf1:Ethernet1", pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.2e6)
    run(chain, feed, 40)
    assert not active(chain)


def test_all_traffic_on_one_member_from_the_start_is_the_hash_not_a_collision():
    # low-entropy traffic under a plain 5-tuple hash can land every flow of a leaf on one uplink:
    # a control run with such traffic stays quiet; only a later move onto fewer members fires
    topo = spine_leaf(4, 2, 4)
    feed = Feed(topo)
    chain = chain_of(topo, "uplink_imbalance")
    feed.load("leaf1:Ethernet5", 1.0)
    for k in range(6, 9):
        feed.load(f"leaf1:Ethernet{k}", 0.0)
    feed.set("leaf1:Ethernet1", pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.4e6)
    run(chain, feed, 40)
    assert not active(chain)
