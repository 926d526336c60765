"""The correlator on hand-built symptom sets: pause trees, their roots, cycles, link joins."""

from __future__ import annotations

import numpy as np

from detectors.correlation.correlator import Correlator
from detectors.correlation.pause_facts import build
from detectors.correlation.pause_graph import host_node
from detectors.features import FeatureTable, Frame, col
from detectors.ports import PortIndex
from detectors.series import SeriesIndex
from pipeline.model import Alert
from pipeline.topology.model import Topology, spine_leaf

T0 = 1_000_000_000_000
S = 1_000_000_000


def sym(name: str, port: str, t: float = 10.0, **evidence: float) -> Alert:
    ns = T0 + round(t * 1e9)
    return Alert(name=name, entity=port, ports=(port,), root_cause=False, evidence=evidence,
                 labels={"port": port}, starts_ns=ns - 1_000_000_000, updated_ns=ns)


def device_sym(name: str, device: str, t: float = 10.0, **evidence: float) -> Alert:
    ns = T0 + round(t * 1e9)
    return Alert(name=name, entity=device, root_cause=False, evidence=evidence,
                 starts_ns=ns - 1_000_000_000, updated_ns=ns)


def correlate(topo: Topology, symptoms: list[Alert], corr: Correlator | None = None,
              t: float = 12.0) -> tuple[list[Alert], list[Alert]]:
    corr = corr or Correlator(topo)
    names = SeriesIndex()
    frame = Frame(FeatureTable(), PortIndex(names, topo), np.empty(0, np.int64),
                  T0 + round(t * 1e9))
    out = corr.correlate(symptoms, frame)
    return [a for a in out if a.root_cause], [a for a in out if not a.root_cause]


def frame_at(topo: Topology, t: float, cadence_s: float) -> Frame:
    """An empty frame at time ``t`` whose ports' rates are ``cadence_s`` apart (the fabric's
    sample interval, as the correlator reads it)."""
    table = FeatureTable()
    table._grow(4)
    table.dt[:, col("if_out_octets")] = cadence_s
    return Frame(table, PortIndex(SeriesIndex(), topo), np.empty(0, np.int64), T0 + round(t * S))


TOPO = spine_leaf(2, 3, 2)  # leafN: Ethernet1-2 hosts, Ethernet3 → spine1, Ethernet4 → spine2
# spineS: EthernetN → leafN


def storm_tree() -> list[Alert]:
    """host3 (leaf2:Ethernet1) stuck; leaf2 pauses both spines; spines pause leaf1 and leaf3."""
    return [
        sym("pfc_watchdog", "leaf2:Ethernet1", pause_share=1.0, drain=0.0),
        sym("pfc_paused", "spine1:Ethernet2", pause_share=0.4),
        sym("pfc_paused", "spine2:Ethernet2", pause_share=0.4),
        sym("pfc_paused", "leaf1:Ethernet3", pause_share=0.2),
        sym("pfc_paused", "leaf3:Ethernet4", pause_share=0.2),
        sym("pfc_pausing", "leaf1:Ethernet1", throttle=0.3),
    ]


def test_graph_walks_from_victims_to_the_stuck_host():
    graph = build(storm_tree(), TOPO)
    assert graph.roots() == {host_node("host3")}
    tree = graph.ancestors([host_node("host3")])
    assert {"leaf1:Ethernet3", "leaf3:Ethernet4", "spine1:Ethernet2", host_node("host1")} <= tree


def test_one_storm_incident_explains_and_inhibits_every_echo():
    roots, symptoms = correlate(TOPO, storm_tree())
    assert [(a.name, a.entity) for a in roots] == [("pfc_storm", "host3")]
    storm = roots[0]
    assert len(storm.explains) == 6
    assert all(s.inhibited_by == storm.fingerprint for s in symptoms)
    assert storm.severity.value == "critical"


def test_a_pause_never_travels_back_over_the_link_it_came_in_on():
    # spine1 pauses leaf1's uplink; spine1's only other blocked egress is toward leaf1 itself
    graph = build([sym("pfc_paused", "leaf1:Ethernet3"), sym("pfc_paused", "spine1:Ethernet1")],
                  TOPO)
    assert "spine1:Ethernet1" not in graph.edges.get("leaf1:Ethernet3", set())
    assert graph.edges["leaf1:Ethernet3"] == {"device:spine1"}


def test_a_pause_seen_only_by_the_pausing_end_still_blocks_the_other():
    # leaf1 times its pauses (SONiC); spine1 only counts frames and stayed under its threshold
    graph = build([sym("pfc_pausing", "leaf1:Ethernet3", throttle=0.3)], TOPO)
    assert graph.is_blocked("spine1:Ethernet1")
    assert not graph.is_blocked("leaf1:Ethernet3")


def test_a_saturated_link_into_a_leaf_waits_for_its_oversubscribed_hosts():
    # the senders' paths meet on the spine's downlink: it runs at line rate with a queue, and
    # every byte of it leaves through leaf3's host ports, one of them oversubscribed
    graph = build([sym("queue_buildup", "spine1:Ethernet3", util=1.0),
                   sym("egress_oversubscribed", "leaf3:Ethernet1", util=1.0)], TOPO)
    assert "leaf3:Ethernet1" in graph.edges["spine1:Ethernet3"]
    # a link into a leaf with no oversubscribed host port waits for nothing it can name
    graph = build([sym("queue_buildup", "spine1:Ethernet3", util=1.0)], TOPO)
    assert not graph.edges.get("spine1:Ethernet3")


WIDE = spine_leaf(2, 3, 4)  # leafN: Ethernet1-4 hosts, Ethernet5 → spine1, Ethernet6 → spine2


def fan_in(*senders: tuple[str, float]) -> list[Alert]:
    """host9 (leaf3:Ethernet1) at line rate with a standing queue; its back-pressure reaches the
    hosts of leaf1 and leaf2 through spine1; each sender is (its leaf port, what it sends, as a
    share of its line rate). Held NICs are backlogged: paused whenever they do not send."""
    out = [sym("egress_oversubscribed", "leaf3:Ethernet1", util=1.0),
           sym("queue_buildup", "leaf3:Ethernet1", util=1.0),
           sym("queue_buildup", "spine1:Ethernet3", util=0.2),
           sym("queue_buildup", "leaf1:Ethernet5", util=0.1),
           sym("queue_buildup", "leaf2:Ethernet5", util=0.1)]
    return out + [sym("pfc_pausing", port, inbound=sent, throttle=1.0 - sent, measured=1.0)
                  for port, sent in senders]


def test_an_incast_is_senders_converging_on_one_receiver_not_load_spread_over_many():
    # two hosts each held to about half its line rate: host9's line rate is what they share
    roots, symptoms = correlate(WIDE, fan_in(("leaf1:Ethernet1", 0.48),
                                              ("leaf2:Ethernet3", 0.5)))
    assert [(a.name, a.entity) for a in roots] == [("incast", "host9")]
    assert roots[0].evidence["senders"] == 2.0 and roots[0].evidence["demand_ratio"] == 2.0
    assert {s.entity for s in symptoms if s.inhibited_by} >= {"leaf1:Ethernet1",
                                                               "spine1:Ethernet3"}
    # random many-to-many: eight hosts held by host9's back-pressure, each paused 60 % of the
    # time like an incast's senders, but each sends 40 % of its line rate, three times its
    # eighth of host9's: most of what they send goes elsewhere. Load, not an incast
    spread = fan_in(*((f"leaf{leaf}:Ethernet{k}", 0.4) for leaf in (1, 2) for k in range(1, 5)))
    assert correlate(WIDE, spread)[0] == []
    # one sender is not an incast, however hard it is held
    assert correlate(WIDE, fan_in(("leaf1:Ethernet1", 0.9)))[0] == []
    # the line: a converging sender sends at most twice its share of the receiver. Four at 0.2
    # converge; two victims of the spreading at 0.6 do not count (nor hide the incast)
    roots, _ = correlate(WIDE, fan_in(*((f"leaf1:Ethernet{k}", 0.2) for k in range(1, 5)),
                                       ("leaf2:Ethernet1", 0.6), ("leaf2:Ethernet2", 0.6)))
    assert [(a.name, a.evidence["senders"]) for a in roots] == [("incast", 4.0)]


def test_a_receiver_saturated_since_monitoring_began_is_no_incast() -> None:
    # the same two converging senders, on a port whose saturation was there when monitoring
    # started (the workload's steady state): no event, no incast, its symptoms stay visible
    flooding = fan_in(("leaf1:Ethernet1", 0.48), ("leaf2:Ethernet3", 0.5))
    habitual = [sym(a.name, a.entity, **{**a.evidence, "habitual": 1.0})
                if a.name == "egress_oversubscribed" else a for a in flooding]
    roots, symptoms = correlate(WIDE, habitual)
    assert roots == []
    assert any(s.name == "egress_oversubscribed" and not s.inhibited_by for s in symptoms)
    # and the same port once its saturation began while watched
    assert [(a.name, a.entity) for a in correlate(WIDE, flooding)[0]] == [("incast", "host9")]


def test_senders_held_behind_an_incast_make_no_second_incast_of_a_busy_port_beside_it() -> None:
    # host9's two senders are held through spine1, which also feeds host10 (leaf3:Ethernet2),
    # at line rate under other load: their pause trees reach both saturated ports. They are
    # counted once, where they explain the most: host9, whose queue stands (ECN marks); host10,
    # whose switch shows no ECN, is busy, not a second incast
    incast = fan_in(("leaf1:Ethernet1", 0.48), ("leaf2:Ethernet3", 0.5))
    incast[0] = sym("egress_oversubscribed", "leaf3:Ethernet1", util=1.0, ecn=0.5)
    busy = [sym("egress_oversubscribed", "leaf3:Ethernet2", util=0.99),
            sym("queue_buildup", "leaf3:Ethernet2", util=0.99)]
    roots, _ = correlate(WIDE, incast + busy)
    assert [(a.name, a.entity, a.evidence["senders"]) for a in roots] == [("incast", "host9", 2.0)]
    # the same two held senders and two ports alike: still one incast, never two
    alike = [a.model_copy(update={"evidence": {"util": 1.0}})
             if a.name == "egress_oversubscribed" else a for a in incast + busy]
    assert len(correlate(WIDE, alike)[0]) == 1


def _neighbours_held(local_in: float) -> list[Alert]:
    """host9 (leaf3:Ethernet1) at line rate; leaf3 holds back its two other hosts, each sending
    half its line rate; ``local_in``: leaf3's host-to-host traffic over host9's line rate."""
    return [sym("egress_oversubscribed", "leaf3:Ethernet1", util=0.96, local_in=local_in),
            sym("queue_buildup", "leaf3:Ethernet1", util=0.96),
            sym("pfc_pausing", "leaf3:Ethernet2", inbound=0.5, throttle=0.5, measured=0.0),
            sym("pfc_pausing", "leaf3:Ethernet3", inbound=0.49, throttle=0.51, measured=0.0)]


def test_neighbours_that_can_carry_little_of_the_receivers_traffic_make_no_incast() -> None:
    # uniform traffic: host9 receives from many senders a little more than its line rate; two
    # hosts on its own leaf are held (their ingress buffers hold some of its queue), but the leaf
    # carries only 14 % of host9's line rate host to host: most of what they send goes up into
    # the fabric, and host9 is full of traffic from senders it does not hold back. Load
    assert correlate(WIDE, _neighbours_held(0.14))[0] == []
    # the line: together they send at most twice what the leaf carries host to host
    assert correlate(WIDE, _neighbours_held(0.49))[0] == []
    roots, _ = correlate(WIDE, _neighbours_held(0.5))
    assert [(a.name, a.entity, a.evidence["senders"]) for a in roots] == [("incast", "host9", 2.0)]
    # a switch that did not say (a port without a fresh rate) leaves the senders as they were
    roots, _ = correlate(WIDE, [a.model_copy(update={"evidence": {"util": 0.96}})
                                if a.name == "egress_oversubscribed" else a
                                for a in _neighbours_held(0.14)])
    assert [(a.name, a.entity) for a in roots] == [("incast", "host9")]


def _flooded(util: float) -> list[Alert]:
    return [sym("egress_oversubscribed", "leaf3:Ethernet1", util=util),
            sym("queue_buildup", "leaf3:Ethernet1", util=util),
            sym("queue_buildup", "spine1:Ethernet3", util=0.2),
            sym("queue_buildup", "leaf1:Ethernet3", util=0.1),
            sym("pfc_pausing", "leaf1:Ethernet1", throttle=0.9, inbound=0.1),
            sym("pfc_pausing", "leaf1:Ethernet2", throttle=0.92, inbound=0.08)]


def test_an_oversubscribed_port_that_stopped_sending_is_no_incast():
    # its symptom waits to clear while nothing feeds it any more: starved, not flooded
    assert [(a.name, a.entity) for a in correlate(TOPO, _flooded(1.0))[0]] == [("incast", "host5")]
    assert correlate(TOPO, _flooded(0.1))[0] == []


def test_senders_held_back_by_a_deadlock_make_no_incast():
    cycle = [sym("pfc_hold", p) for p in ("leaf1:Ethernet3", "spine1:Ethernet2",
                                          "leaf2:Ethernet4", "spine2:Ethernet1")]
    roots, _ = correlate(TOPO, [*_flooded(1.0), *cycle])
    assert [a.name for a in roots] == ["pfc_deadlock"]


def test_a_cycle_of_held_ports_is_one_deadlock_on_its_links():
    cycle = [sym("pfc_hold", p) for p in ("leaf1:Ethernet3", "spine1:Ethernet2",
                                          "leaf2:Ethernet4", "spine2:Ethernet1")]
    roots, _ = correlate(TOPO, cycle)
    assert len(roots) == 1 and roots[0].name == "pfc_deadlock"
    assert roots[0].entity == "leaf1~spine1,leaf1~spine2,leaf2~spine1,leaf2~spine2"


def _spines_view(share: float, inbound: float) -> list[Alert]:
    """The cycle of the test above as the spines see it, the leaves' telemetry late: each spine
    holds its own port down (``pfc_hold``) and pauses the leaf port that feeds it."""
    return [sym("pfc_hold", "spine1:Ethernet2"), sym("pfc_hold", "spine2:Ethernet1"),
            *(sym("pfc_pausing", p, pause_share=share, inbound=inbound, measured=1.0)
              for p in ("spine1:Ethernet1", "spine2:Ethernet2"))]


def test_a_deadlock_is_seen_from_either_end_of_its_links() -> None:
    # spine1 pauses leaf1:Ethernet3 all the time and receives nothing from it: that port is
    # held, whether or not leaf1's own samples have said so yet
    roots, _ = correlate(TOPO, _spines_view(1.0, 0.0))
    assert [(a.name, a.entity) for a in roots] == [
        ("pfc_deadlock", "leaf1~spine1,leaf1~spine2,leaf2~spine1,leaf2~spine2")]
    assert set(roots[0].ports) == {"leaf1:Ethernet3", "spine1:Ethernet2", "leaf2:Ethernet4",
                                   "spine2:Ethernet1"}
    # a peer that still sends, or one paused only part of the time, is not known to be stuck
    assert correlate(TOPO, _spines_view(1.0, 0.3))[0] == []
    assert correlate(TOPO, _spines_view(0.3, 0.0))[0] == []


def test_held_ports_that_do_not_close_a_cycle_are_no_deadlock():
    roots, _ = correlate(TOPO, [sym("pfc_hold", "leaf1:Ethernet3"),
                                sym("pfc_hold", "spine1:Ethernet2")])
    assert not any(a.name == "pfc_deadlock" for a in roots)


def test_errors_at_both_ends_are_one_faulty_link_in_both_directions():
    roots, symptoms = correlate(TOPO, [
        sym("fcs_errors", "leaf2:Ethernet3", corruption=2e-6),
        sym("fcs_errors", "spine1:Ethernet2", corruption=1e-7)])
    assert [(a.name, a.entity) for a in roots] == [("faulty_link", "leaf2~spine1")]
    assert roots[0].annotations["summary"].endswith("both directions")
    assert roots[0].severity.value == "critical"
    assert all(s.inhibited_by == roots[0].fingerprint for s in symptoms)


def test_flap_explains_the_errors_on_its_link_and_a_link_down_now_stands_beside_it():
    flap = sym("carrier_flap", "spine2:Ethernet1", bounces=2.0)
    errors = sym("fcs_errors", "leaf1:Ethernet4", corruption=1e-6)
    roots, symptoms = correlate(TOPO, [flap, errors])
    assert [(a.name, a.entity) for a in roots] == [("link_flap", "leaf1~spine2")]
    assert all(s.inhibited_by == roots[0].fingerprint for s in symptoms)
    # down now, after flapping: on-call must hear that it is down (a flap cannot be told from a
    # down link until it comes back), and the flap stays on record beside it
    roots, symptoms = correlate(TOPO, [sym("port_down", "leaf1:Ethernet4"), flap, errors])
    assert sorted((a.name, a.entity) for a in roots) == [("link_down", "leaf1~spine2"),
                                                         ("link_flap", "leaf1~spine2")]
    down = next(a for a in roots if a.name == "link_down")
    assert all(s.inhibited_by == down.fingerprint for s in symptoms)


def test_imbalance_that_follows_a_link_failure_is_its_consequence():
    corr = Correlator(TOPO)
    failure = [sym("port_down", "leaf3:Ethernet3", t=5.0), sym("port_down", "spine1:Ethernet3",
                                                                t=5.0)]
    imbalance = device_sym("uplink_imbalance", "leaf1", t=9.0, imbalance=2.0)
    roots, symptoms = correlate(TOPO, [*failure, imbalance], corr)
    assert [a.name for a in roots] == ["link_down"]
    assert next(s for s in symptoms if s.name == "uplink_imbalance").inhibited_by
    # the link comes back; the imbalance's own hysteresis outlives it: still no root cause
    roots, _ = correlate(TOPO, [imbalance], corr, t=13.0)
    assert roots == []


def test_an_imbalance_a_leaf_saw_first_within_one_sample_is_still_the_failures_consequence():
    # SNMP polls reach switches at different moments of a 2 s cadence: leaf1 saw its flows move
    # 1.5 s before anyone polled the link's ends; more than an interval earlier it came first
    corr = Correlator(TOPO)
    table = FeatureTable()
    table._grow(4)
    table.dt[:, col("if_out_octets")] = 2.0
    frame = Frame(table, PortIndex(SeriesIndex(), TOPO), np.empty(0, np.int64), T0 + 12 * S)
    failure = [sym("port_down", "leaf3:Ethernet3", t=9.0), sym("port_down", "spine1:Ethernet3",
                                                                t=9.0)]
    for onset, roots in ((7.5, ["link_down"]), (4.0, ["ecmp_imbalance", "link_down"])):
        imbalance = device_sym("uplink_imbalance", "leaf2", t=onset, imbalance=2.0)
        out = Correlator(TOPO).correlate([*failure, imbalance], frame)
        assert sorted(a.name for a in out if a.root_cause) == roots
    # without a known cadence the order is taken as it is
    roots, _ = correlate(TOPO, [*failure, device_sym("uplink_imbalance", "leaf2", t=7.5)], corr)
    assert sorted(a.name for a in roots) == ["ecmp_imbalance", "link_down"]


def test_an_imbalance_stands_as_a_root_only_once_a_cause_seen_an_interval_later_cannot_come():
    # an SNMP fabric at a 2 s cadence: leaf2 sees its flows move (a re-hash) before the ends of
    # the link that went down are polled, and the link is named down a sample after that; until
    # two intervals have passed since the imbalance began it is not named (its symptom is
    # published), and once the link down is seen it is the link's consequence
    def at(t: float) -> Frame:
        return frame_at(TOPO, t, cadence_s=2.0)

    imbalance = device_sym("uplink_imbalance", "leaf2", t=12.0, imbalance=2.0)  # began at 11
    failure = [sym("port_down", "leaf3:Ethernet3", t=14.0)]   # began at 13, named at 14
    corr = Correlator(TOPO)
    out = corr.correlate([imbalance], at(12.0))
    assert [a for a in out if a.root_cause] == []
    assert [(a.name, a.inhibited_by) for a in out] == [("uplink_imbalance", None)]
    assert [a.name for a in corr.correlate([imbalance], at(13.9)) if a.root_cause] == []
    for t in (14.0, 16.0, 20.0):
        roots = [a.name for a in corr.correlate([imbalance, *failure], at(t)) if a.root_cause]
        assert roots == ["link_down"], t
    # with nothing to explain it, the same imbalance is named two intervals after it began
    alone = Correlator(TOPO)
    assert [a.name for a in alone.correlate([imbalance], at(14.9)) if a.root_cause] == []
    assert [a.name for a in alone.correlate([imbalance], at(15.0)) if a.root_cause] == [
        "ecmp_imbalance"]


def test_a_collision_during_unrelated_incidents_is_still_a_collision():
    # a storm on host3 (leaf2) whose tree stops at leaf2's uplinks and a corrupting link cannot
    # move leaf1's flows: leaf1's imbalance, begun while they were on, is its own root cause
    # (issue 10.3: "missed entirely while a storm and a corruption ran at the same time")
    storm = [sym("pfc_watchdog", "leaf2:Ethernet1", t=3.0, pause_share=1.0, drain=0.0),
             sym("pfc_pausing", "leaf2:Ethernet2", t=3.0, throttle=0.3)]
    corruption = [sym("fcs_errors", "leaf3:Ethernet4", t=4.0, corruption=1e-5)]
    imbalance = device_sym("uplink_imbalance", "leaf1", t=9.0, imbalance=2.0)
    roots, _ = correlate(TOPO, [*storm, *corruption, imbalance])
    assert sorted((a.name, a.entity) for a in roots) == [
        ("ecmp_imbalance", "leaf1"), ("faulty_link", "leaf3~spine2"), ("pfc_storm", "host3")]
    # once the storm's pause reaches leaf1's uplinks, it holds some of leaf1's flows back and not
    # others: the imbalance that follows is the storm's
    spread = [*storm, sym("pfc_paused", "spine1:Ethernet2", t=3.0, pause_share=0.4),
              sym("pfc_paused", "leaf1:Ethernet3", t=3.0, pause_share=0.3)]
    roots, symptoms = correlate(TOPO, [*spread, *corruption, imbalance])
    assert sorted(a.name for a in roots) == ["faulty_link", "pfc_storm"]
    storm_incident = next(a for a in roots if a.name == "pfc_storm")
    assert next(s for s in symptoms if s.name == "uplink_imbalance").inhibited_by == \
        storm_incident.fingerprint


def test_an_imbalance_that_came_first_stays_a_root_cause():
    roots, _ = correlate(TOPO, [device_sym("uplink_imbalance", "leaf1", t=3.0, imbalance=3.0),
                                sym("port_down", "leaf3:Ethernet3", t=9.0)])
    assert {a.name for a in roots} == {"ecmp_imbalance", "link_down"}


def test_misconfig_symptom_on_a_switch_with_a_blocked_egress_is_not_an_incident():
    alone = [device_sym("pause_without_load", "spine2", pause_share=0.05)]
    roots, _ = correlate(TOPO, alone)
    assert [(a.name, a.entity) for a in roots] == [("buffer_misconfig", "spine2")]
    roots, _ = correlate(TOPO, [*alone, sym("pfc_paused", "spine2:Ethernet3", pause_share=0.3)])
    assert roots == []


def test_unexplained_symptoms_are_published_and_congestion_alone_is_only_info():
    roots, symptoms = correlate(TOPO, [sym("queue_buildup", "spine1:Ethernet1", util=0.95),
                                       sym("pfc_pausing", "leaf1:Ethernet1", throttle=0.1),
                                       sym("anomaly", "leaf3:Ethernet3", score=0.9)])
    assert roots == [] and all(s.inhibited_by is None for s in symptoms)
    severity = {s.name: s.severity.value for s in symptoms}
    # benign load stays visible without turning the fabric yellow; the rest keeps its weight
    assert severity == {"queue_buildup": "info", "pfc_pausing": "info", "anomaly": "warning"}


def test_congestion_an_incident_explains_keeps_its_severity():
    _, symptoms = correlate(TOPO, storm_tree())
    paused = [s for s in symptoms if s.name == "pfc_paused"]
    assert paused and all(s.severity.value == "warning" and s.inhibited_by for s in paused)


def test_a_fan_in_that_carries_little_of_the_receiver_is_named_once_it_has_held() -> None:
    # two held senders whose trees reach host9 send a fifth of what it delivers: most of its
    # load comes from senders nobody holds, as when a spreading pause tree is half seen. Named
    # only once it has held for two sample intervals (1 s here), and then it stays named
    def at(t: float) -> Frame:
        return frame_at(WIDE, t, cadence_s=1.0)

    weak = fan_in(("leaf1:Ethernet1", 0.1), ("leaf2:Ethernet3", 0.1))
    corr = Correlator(WIDE)

    def roots(symptoms: list[Alert], t: float) -> list[str]:
        return [a.name for a in corr.correlate(symptoms, at(t)) if a.root_cause]

    assert roots(weak, 12.0) == [] and roots(weak, 13.5) == []
    assert roots(weak[:1], 13.7) == []  # the fan-in gone for a step: it starts again
    assert roots(weak, 14.0) == [] and roots(weak, 15.9) == []
    assert roots(weak, 16.0) == ["incast"]
    fainter = fan_in(("leaf1:Ethernet1", 0.05), ("leaf2:Ethernet3", 0.05))
    assert roots(fainter, 16.2) == ["incast"]  # named: it stays named while it lasts
    # senders that carry most of what the receiver delivers are named at once
    assert [a.name for a in correlate(WIDE, fan_in(("leaf1:Ethernet1", 0.48),
                                                     ("leaf2:Ethernet3", 0.5)))[0]] == ["incast"]
