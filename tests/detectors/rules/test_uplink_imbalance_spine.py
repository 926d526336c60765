"""Uplink imbalance one tier up: a spine's cross-zone flows crowding onto few of its uplinks to
the aggregation tier (three-tier fabrics), judged within that group against the spine's own
learned baseline, as a leaf's uplinks are."""

from __future__ import annotations

from detectors.chain import DetectionChain
from pipeline.topology.model import Topology
from pipeline.topology.shape import FabricShape
from tests.detectors.conftest import Feed, active, chain_of, run

SPINE = "z2-spine1"


def three_tier() -> Topology:
    """2 zones of 2 spines x 2 leaves, 4 aggregation switches: each spine has 4 agg uplinks."""
    return FabricShape(2, 2, 2, zones=2, aggs=4).build()


def agg_uplinks(topo: Topology, spine: str = SPINE) -> list[str]:
    return [str(ln.a if ln.a.device == spine else ln.b) for ln in topo.agg_uplinks(spine)]


def leaf_facing(topo: Topology, spine: str = SPINE) -> list[str]:
    return [str(ln.a if ln.a.device == spine else ln.b) for ln in topo.down_links(spine)]


def spine_loaded(*loads: float) -> tuple[Topology, Feed, DetectionChain]:
    topo = three_tier()
    feed = Feed(topo)
    spread(topo, feed, *loads)
    return topo, feed, chain_of(topo, "uplink_imbalance")


def spread(topo: Topology, feed: Feed, *loads: float) -> None:
    for port, load in zip(agg_uplinks(topo), loads, strict=True):
        feed.load(port, load)


def leaves_held(topo: Topology, feed: Feed, share: float = 0.4) -> None:
    """The spine pauses one of its leaves: its agg uplink group is the bottleneck."""
    feed.set(leaf_facing(topo)[0], pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=share * 1e6)


def test_topology_gives_the_spine_a_group_of_four_agg_uplinks():
    topo = three_tier()
    assert len(agg_uplinks(topo)) == 4 and len(leaf_facing(topo)) == 2


def test_spine_collision_onto_one_agg_uplink_is_an_imbalance_on_the_spine():
    topo, feed, chain = spine_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(topo, feed, 0.05, 0.05, 0.05, 1.0)
    leaves_held(topo, feed)
    run(chain, feed, 3)
    incident = active(chain)[("ecmp_imbalance", SPINE)]
    assert incident.root_cause and incident.ports == (agg_uplinks(topo)[3],)
    assert "aggregation tier" in incident.annotations["summary"]
    # its own leaves' uplinks are another group: none of them is named
    assert ("ecmp_imbalance", "z2-leaf1") not in active(chain)


def test_a_spine_collision_that_holds_no_leaf_back_is_not_an_incident():
    topo, feed, chain = spine_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(topo, feed, 0.05, 0.05, 0.05, 1.0)
    run(chain, feed, 10)
    assert not active(chain)


def test_a_spine_whose_agg_uplinks_were_always_uneven_is_its_own_baseline():
    topo, feed, chain = spine_loaded(1.0, 0.2, 0.2, 0.2)
    leaves_held(topo, feed)
    run(chain, feed, 40)
    assert not active(chain)


def test_the_spines_leaf_facing_ports_are_not_its_group():
    # the spine's links down are uneven (one leaf receives more): that is no hash of the spine's
    topo, feed, chain = spine_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    down = leaf_facing(topo)
    feed.load(down[0], 1.0)
    feed.load(down[1], 0.05)
    feed.set(down[1], pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.4e6)
    run(chain, feed, 10)
    assert not active(chain)


def test_an_aggregation_switch_has_no_group_up():
    topo, feed, chain = spine_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    agg_ports = [str(p) for p in topo.ports("agg1")]
    for i, port in enumerate(agg_ports):
        feed.load(port, 1.0 if i == 0 else 0.05)
        feed.set(port, pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=0.4e6)
    run(chain, feed, 10)
    assert not any(device == "agg1" for _, device in active(chain))
