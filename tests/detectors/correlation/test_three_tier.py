"""The correlator across three tiers (AI zones joined by an aggregation tier), on hand-built
symptom sets: a pause tree that climbs from one zone through the aggregation switches and down
into another has one root, links to the aggregation tier are named by their link, and a spine's
uneven aggregation uplinks are an imbalance of the spine."""

from __future__ import annotations

from pipeline.model import Alert
from pipeline.topology.model import Port
from pipeline.topology.shape import FabricShape
from tests.detectors.correlation.test_correlator import correlate, device_sym, sym

# 3 zones of 2 spines x 2 leaves x 2 hosts; 2 aggregation switches. Zone 2's hosts: host5..8
# (host5 on z2-leaf1:Ethernet1). A leaf: Ethernet1-2 hosts, 3-4 to its zone's spines. A spine:
# Ethernet1-2 to its leaves, 3-4 to agg1, agg2. An aggregation switch: Ethernet1..6 to z1-spine1,
# z1-spine2, z2-spine1, z2-spine2, z3-spine1, z3-spine2.
TOPO = FabricShape(2, 2, 2, zones=3, aggs=2).build()


def test_the_hand_built_fabric_is_wired_as_the_comments_say():
    assert str(TOPO.peer(Port.parse("agg1:Ethernet3"))) == "z2-spine1:Ethernet3"
    assert str(TOPO.peer(Port.parse("agg1:Ethernet5"))) == "z3-spine1:Ethernet3"
    assert TOPO.host_by_name["host5"].port.device == "z2-leaf1"
    assert TOPO.zone("z2-leaf1") == 2


def storm_across_zones() -> list[Alert]:
    """host5 (zone 2) stuck; its leaf pauses z2-spine1, which pauses agg1, which pauses z3-spine1,
    which pauses z3-leaf1, which pauses its hosts. Each pause is seen from one end only, as
    mixed dialects do (a timer at one end, frame counts at the other)."""
    return [
        sym("pfc_watchdog", "z2-leaf1:Ethernet1", pause_share=1.0, drain=0.0),
        sym("pfc_pausing", "z2-leaf1:Ethernet3", throttle=0.2),       # → z2-spine1:Ethernet1
        sym("pfc_paused", "agg1:Ethernet3", pause_share=0.5),          # paused by z2-spine1
        sym("pfc_pausing", "agg1:Ethernet5", throttle=0.3),            # → z3-spine1:Ethernet3
        sym("pfc_paused", "z3-leaf1:Ethernet3", pause_share=0.3),      # paused by z3-spine1
        sym("pfc_pausing", "z3-leaf1:Ethernet1", throttle=0.4),        # → host9
    ]


def test_a_storm_in_zone_2_that_pauses_an_agg_and_zone_3_spines_has_one_root_in_zone_2():
    roots, symptoms = correlate(TOPO, storm_across_zones())
    assert [(r.name, r.entity) for r in roots] == [("pfc_storm", "host5")]
    assert TOPO.zone(TOPO.host_by_name["host5"].port.device) == 2
    # every echo, at every tier and in the other zone, is the storm's: nobody else is paged
    assert {s.ports[0] for s in symptoms if s.inhibited_by == roots[0].fingerprint} == {
        s.ports[0] for s in storm_across_zones()}


def test_an_aggregation_switch_that_pauses_with_nothing_blocked_is_the_tree_root_not_a_storm():
    # no stuck host behind it: the tree ends at the aggregation switch, which is no storm
    roots, _ = correlate(TOPO, storm_across_zones()[3:])
    assert not any(r.name == "pfc_storm" for r in roots)


def test_corruption_on_an_aggregation_link_is_a_faulty_link_named_by_the_link():
    roots, _ = correlate(TOPO, [sym("fcs_errors", "z2-spine1:Ethernet3", corruption=1e-5)])
    assert [(r.name, r.entity) for r in roots] == [("faulty_link", "agg1~z2-spine1")]
    assert "from agg1:Ethernet3 to z2-spine1:Ethernet3" in roots[0].annotations["summary"]


def test_an_aggregation_link_down_at_both_ends_and_a_flap_seen_at_the_agg_end():
    down = [sym("port_down", "agg2:Ethernet6"), sym("port_down", "z3-spine2:Ethernet4")]
    roots, _ = correlate(TOPO, down)
    assert [(r.name, r.entity, r.confidence) for r in roots] == [
        ("link_down", "agg2~z3-spine2", 1.0)]
    roots, _ = correlate(TOPO, [sym("carrier_flap", "agg1:Ethernet1", bounces=2.0)])
    assert [(r.name, r.entity) for r in roots] == [("link_flap", "agg1~z1-spine1")]


def test_a_spine_imbalance_explains_its_hot_agg_uplink():
    hot = "z2-spine1:Ethernet4"
    imbalance = device_sym("uplink_imbalance", "z2-spine1", imbalance=2.5)
    imbalance = imbalance.model_copy(update={"ports": (hot,)})
    queue = sym("queue_buildup", hot, util=1.0)
    roots, symptoms = correlate(TOPO, [imbalance, queue])
    assert [(r.name, r.entity) for r in roots] == [("ecmp_imbalance", "z2-spine1")]
    assert all(s.inhibited_by == roots[0].fingerprint for s in symptoms)


def test_a_spine_imbalance_after_an_agg_link_failure_is_the_failures_consequence():
    failure = [sym("port_down", "agg1:Ethernet3", t=5.0),
               sym("port_down", "z2-spine1:Ethernet3", t=5.0)]
    imbalance = device_sym("uplink_imbalance", "z2-spine1", t=9.0, imbalance=2.0)
    roots, _ = correlate(TOPO, [*failure, imbalance])
    assert [(r.name, r.entity) for r in roots] == [("link_down", "agg1~z2-spine1")]
