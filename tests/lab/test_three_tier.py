"""Three-tier fabrics in the lab: paths across zones, PFC across tiers, every fault kind on the new
kinds of target, deep-buffer spines, TE across zones.

The fabric (unless a test says otherwise): 3 zones of 2 spines x 2 leaves x 2 hosts, joined by 2
aggregation switches; zone 1 holds host1-4, zone 2 host5-8, zone 3 host9-12. A leaf's ports are
Ethernet1-2 (hosts), Ethernet3-4 (spine1, spine2); a spine's Ethernet1-2 (leaf1, leaf2),
Ethernet3-4 (agg1, agg2); an aggregation switch's Ethernet1..6 face z1-spine1, z1-spine2,
z2-spine1, ... z3-spine2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lab import counters as cf
from lab.buffers import BufferProfile, pg_xoff
from lab.routing import RouteInputs, Router
from lab.scenario.load import parse_scenario
from lab.scenario.spec import Scenario
from lab.sim.simulation import Simulation
from lab.te.cspf import isolates, plan_paths
from lab.traffic import build_entries, build_flows
from lab.wiring import (
    TIER_AGG_DOWN,
    TIER_LEAF_UP,
    TIER_SPINE_DOWN,
    TIER_SPINE_UP,
    build_wiring,
)
from pipeline.errors import ConfigError
from tests.lab.conftest import make_scenario

FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "zones": 3, "aggs": 2}
TRAFFIC = [{"pattern": "alltoall", "hosts": "all", "load": 0.5, "qps_per_flow": 8}]
START, END = 1.0, 3.0


def _sc(faults: list[dict[str, Any]] | None = None, **kw: Any) -> Scenario:
    kw.setdefault("fabric", FABRIC)
    kw.setdefault("traffic", TRAFFIC)
    kw.setdefault("routing", "eecmp")
    return make_scenario(faults=faults or [], **kw)


def _fault(kind: str, target: Any, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "target": target, "at_s": START, "params": params}


def _run(sc: Scenario) -> tuple[Simulation, np.ndarray]:
    sim = Simulation(sc)
    sim.run_until(START)
    before = sim.counters.vector.copy()
    sim.run_until(END)
    return sim, before


def _rate(sim: Simulation, before: np.ndarray, port: str, fld: int,
          prio: int | None = None) -> float:
    lay = sim.counters.layout
    p = sim.wiring.port_index(*port.split(":"))
    i = lay.port_index(p, fld) if prio is None else lay.prio_index(p, prio, fld)
    return float(sim.counters.vector[i] - before[i]) / (END - START)


# ---------------------------------------------------------------------------- the scenario format

def test_three_tier_fields_and_zone_hosts() -> None:
    sc = _sc(traffic=[{"pattern": "allreduce", "hosts": "z2", "load": 0.5}])
    assert sc.traffic[0].hosts == ("host5", "host6", "host7", "host8")
    topo = sc.topology()
    assert topo.aggs == ("agg1", "agg2") and "agg2~z3-spine1" in topo.link_by_id
    with pytest.raises(ConfigError, match=r"fabric\.aggs"):
        make_scenario(fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "zones": 2})
    with pytest.raises(ConfigError, match="agg_gbps"):
        make_scenario(fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "agg_gbps": 100})
    with pytest.raises(ConfigError, match="zone"):
        _sc(traffic=[{"pattern": "allreduce", "hosts": "z9"}])
    # ecmp_collision takes a spine with aggregation uplinks, not one without
    _sc([_fault("ecmp_collision", "z1-spine1", flows=2)])
    with pytest.raises(ConfigError, match="spine with aggregation uplinks"):
        _sc([_fault("ecmp_collision", "agg1", flows=2)])
    with pytest.raises(ConfigError, match="targets a leaf"):
        make_scenario(faults=[_fault("ecmp_collision", "spine1", flows=2)])


# ---------------------------------------------------------------------------- paths

def _router(sc: Scenario) -> tuple[Router, np.ndarray]:
    w = build_wiring(sc.topology())
    flows = build_flows(sc, w)
    return (Router(w, flows, build_entries(flows, w, sc.seed), sc.routing, sc.seed),
            np.ones(w.n_links, dtype=bool))


def _devices(router: Router, ch: np.ndarray, i: int) -> list[str]:
    w = router.wiring
    return [w.device_name(int(w.port_device[c])) for c in ch[i] if c >= 0]


def test_cross_zone_paths_climb_to_the_aggregation_tier() -> None:
    router, usable = _router(_sc())
    ch, ok = router.routes(RouteInputs(usable))
    assert ok.all()
    e, topo = router.entries, router.wiring.topology
    roles_seen = set()
    for i in range(len(e)):
        devs = _devices(router, ch, i)
        zs, zd = topo.zone(router.wiring.hosts[e.src[i]]), topo.zone(router.wiring.hosts[e.dst[i]])
        roles = tuple(topo.role(d) for d in devs)
        if e.src_leaf[i] == e.dst_leaf[i]:
            assert roles == ("host", "leaf")
        elif zs == zd:
            assert roles == ("host", "leaf", "spine", "leaf")
            assert {topo.zone(d) for d in devs[1:]} == {zs}
        else:
            # host -> leaf -> spine of the source zone -> agg -> spine of the destination zone
            assert roles == ("host", "leaf", "spine", "agg", "spine", "leaf")
            assert topo.zone(devs[2]) == zs and topo.zone(devs[4]) == zd
            assert topo.zone(devs[5]) == zd
        roles_seen.add(roles)
    assert len(roles_seen) == 3


def test_each_hop_hashes_ecmp_keeps_qps_together_eecmp_spreads_them() -> None:
    for routing, spread in (("ecmp", False), ("eecmp", True)):
        router, usable = _router(_sc(routing=routing))
        ch, _ = router.routes(RouteInputs(usable))
        e = router.entries
        cross = np.flatnonzero(ch[:, TIER_SPINE_UP] >= 0)
        per_flow = [len({int(ch[i, TIER_SPINE_UP]) for i in cross if e.flow[i] == f})
                    for f in np.unique(e.flow[cross])]
        assert (max(per_flow) > 1) == spread


def test_pinned_routes_by_destination_at_every_hop() -> None:
    router, usable = _router(_sc(routing="pinned"))
    ch, _ = router.routes(RouteInputs(usable))
    e = router.entries
    for tier in (TIER_LEAF_UP, TIER_SPINE_UP, TIER_AGG_DOWN, TIER_SPINE_DOWN):
        for dst in np.unique(e.dst):
            mine = (e.dst == dst) & (ch[:, tier] >= 0)
            # one source leaf: one choice per destination
            for src_leaf in np.unique(e.src_leaf[mine]):
                chans = {int(c) for c in ch[mine & (e.src_leaf == src_leaf), tier]}
                assert len(chans) == 1


def test_dead_aggregation_links_are_routed_around_and_a_zone_can_be_cut_off() -> None:
    router, usable = _router(_sc())
    w = router.wiring
    for ln in w.topology.agg_uplinks("z2-spine1"):
        usable[w.link_index(ln.id)] = False
    ch, ok = router.routes(RouteInputs(usable))
    assert ok.all()
    z2s1 = set(w.switch_ports[w.device_index("z2-spine1")].tolist())
    assert not np.isin(ch[:, [TIER_SPINE_UP, TIER_AGG_DOWN]], list(z2s1)).any()
    # and no cross-zone traffic is sent down from an aggregation switch to that spine
    assert not np.isin(ch[:, TIER_AGG_DOWN], [w.peer[p] for p in z2s1 if w.peer[p] >= 0]).any()
    assert isolates(w, usable) is None
    for ln in w.topology.agg_uplinks("z2-spine2"):
        usable[w.link_index(ln.id)] = False
    assert isolates(w, usable) == "would cut zone z2 off the aggregation tier"
    ch, ok = router.routes(RouteInputs(usable))
    e = router.entries
    zone2 = np.isin(e.src, [4, 5, 6, 7]) ^ np.isin(e.dst, [4, 5, 6, 7])
    assert (~ok[zone2]).all() and ok[~zone2].all()


def test_te_places_cross_zone_entries_on_disjoint_widest_paths() -> None:
    sc = _sc(routing="te", traffic=[{"pattern": "allreduce", "hosts": "all", "load": 1.0,
                                     "qps_per_flow": 2}])
    sim = Simulation(sc, jitter=False)
    e, w = sim.entries, sim.wiring
    demand = sim.flows.bps[e.flow] / 8.0 * e.share
    plan = plan_paths(w, e, demand, np.ones(w.n_links, dtype=bool))
    assert plan.up is not None and plan.agg is not None
    assert (plan.up >= 0).any()
    # no channel is planned beyond its line rate: the ring fits the fabric without collisions
    assert plan.load.max() <= w.bps.max() / 8.0 * (1 + 1e-9)
    sim.set_te_paths(*plan.te_paths())
    sim.run_until(2.0)
    ch = sim.physics.e_ch
    planned = plan.up >= 0
    member = [int(np.flatnonzero(w.spine_uplinks[np.flatnonzero(
        w.spine_uplinks == ch[i, TIER_SPINE_UP])[0] // w.spine_uplinks.shape[1]]
        == ch[i, TIER_SPINE_UP])[0]) for i in np.flatnonzero(planned)]
    assert member == plan.up[planned].tolist()
    paused = sim.counters.prio[:, 3, cf.Q_PFC_RX_US].sum()
    assert paused == 0.0          # TE placed every QP on a free path: nothing pauses


# ---------------------------------------------------------------------------- PFC across tiers

def test_pause_climbs_from_a_leaf_through_spine_and_aggregation_into_another_zone() -> None:
    """Hand-computed at 1 µs steps: host1 (zone 1) sends to host3 (zone 2) at line rate, 400G =
    50 GB/s, over host1 -> z1-leaf1 -> z1-spine1 -> agg1 -> z2-spine1 -> z2-leaf1 -> host3; host3
    stops draining at t=0. Each PG on the way fills at 50 GB/s to its XOFF and then pauses the hop
    before it: z2-leaf1's 400 KB in 8 µs, z2-spine1's deep 16 MB in 320 µs more, agg1's 400 KB
    in 8 more, z1-spine1's 16 MB in 320 more, z1-leaf1's 400 KB in 8 more."""
    sc = parse_scenario({
        "format": 1, "name": "climb", "seed": 1, "duration_s": 0.01, "sample_interval_s": 1e-4,
        "fabric": {"spines": 1, "leaves": 1, "hosts_per_leaf": 2, "zones": 2, "aggs": 1},
        "traffic": [{"pattern": "incast", "hosts": ["host3", "host1"], "load": 1.0}],
        "faults": [{"kind": "pfc_storm", "target": "host3", "at_s": 0}]})
    sim = Simulation(sc, dt=1e-6, tick_s=1e-6, jitter=False)
    w, ph = sim.wiring, sim.physics
    path = [w.port_label(c) for c in ph.ch[0] if c >= 0]
    assert path == ["host1:nic", "z1-leaf1:Ethernet3", "z1-spine1:Ethernet2", "agg1:Ethernet2",
                    "z2-spine1:Ethernet1", "z2-leaf1:Ethernet1"]
    expected_us = {"z2-spine1:Ethernet1": 8, "agg1:Ethernet2": 328, "z1-spine1:Ethernet2": 336,
                   "z1-leaf1:Ethernet3": 656, "host1:nic": 664}
    first: dict[str, float] = {}
    for _ in range(700):
        sim.step()
        for label in expected_us:
            c = w.port_index(*label.split(":"))
            if label not in first and ph.phi[c * ph.n_act + int(ph.slot[3])] >= 0.999:
                first[label] = sim.t * 1e6
    assert first == pytest.approx(expected_us, abs=1.0)


def test_spines_of_three_tier_fabrics_have_deep_buffers() -> None:
    buf = BufferProfile()
    w3 = build_wiring(_sc().topology())
    x3 = pg_xoff(w3, buf)
    into_spine = w3.port_index("z1-leaf1", "Ethernet3")
    into_agg = w3.port_index("z1-spine1", "Ethernet3")
    into_leaf = w3.port_index("z1-spine1", "Ethernet1")
    assert x3[into_spine] == buf.deep_spine_xoff_bytes
    assert x3[w3.port_index("agg1", "Ethernet1")] == buf.deep_spine_xoff_bytes
    assert x3[into_agg] == x3[into_leaf] == buf.xoff_bytes
    w2 = build_wiring(make_scenario().topology())
    assert set(pg_xoff(w2, buf)[w2.tier < 5].tolist()) == {buf.xoff_bytes}


# ---------------------------------------------------------------------------- faults on new targets

def test_corruption_on_an_aggregation_link() -> None:
    sim, b = _run(_sc([_fault("link_corruption", "agg1~z2-spine1", rate=1e-3,
                              direction="a_to_b")]))
    # agg1 sends with errors: z2-spine1 (the b end) counts them, agg1 does not
    assert _rate(sim, b, "z2-spine1:Ethernet3", cf.P_IN_FCS) > 0
    assert _rate(sim, b, "z2-spine1:Ethernet3", cf.P_IN_SYMBOL) > 0
    assert _rate(sim, b, "agg1:Ethernet3", cf.P_IN_FCS) == 0


def test_optics_degrade_on_an_aggregation_link() -> None:
    sim, b = _run(_sc([_fault("optics_degrade", "agg2~z3-spine2", start_rate=1e-6,
                              end_rate=1e-3)]))
    for port in ("agg2:Ethernet6", "z3-spine2:Ethernet4"):
        assert _rate(sim, b, port, cf.P_IN_SYMBOL) > 0


@pytest.mark.parametrize("kind", ["link_down", "link_flap"])
def test_down_and_flapping_aggregation_links(kind: str) -> None:
    params = {"period_s": 1.0, "down_s": 0.4} if kind == "link_flap" else {}
    sim, b = _run(_sc([_fault(kind, "agg1~z1-spine2", **params)]))
    for port in ("agg1:Ethernet2", "z1-spine2:Ethernet3"):
        assert _rate(sim, b, port, cf.P_CARRIER) > 0
    p = sim.wiring.port_index("agg1", "Ethernet2")
    if kind == "link_down":
        assert sim.counters.port[p, cf.P_OPER] == cf.OPER_DOWN
        assert _rate(sim, b, "agg1:Ethernet2", cf.P_OUT_OCTETS) == 0
        assert sim.physics.routable.all()       # everything found another way
    else:
        assert _rate(sim, b, "agg1:Ethernet2", cf.P_CARRIER) == pytest.approx(2.0, abs=0.5)


def test_ecmp_collision_on_a_spine_piles_its_flows_onto_one_aggregation_uplink() -> None:
    spine, flows = "z1-spine1", 1000
    sc = _sc([_fault("ecmp_collision", spine, flows=flows)])
    sim = Simulation(sc)
    sim.run_until(START + 0.05)
    w, ph = sim.wiring, sim.physics
    ups = set(w.spine_uplinks[w.spine_index[spine]].tolist())
    on_spine = np.isin(ph.e_ch[:, TIER_SPINE_UP], list(ups))
    flows_here = np.unique(sim.entries.flow[on_spine])
    heavy = flows_here[np.lexsort((flows_here, -sim.flows.bps[flows_here]))][:flows]
    hot = on_spine & np.isin(sim.entries.flow, heavy)
    assert len({int(c) for c in ph.e_ch[hot, TIER_SPINE_UP]}) == 1
    sim.run_until(END)
    out = [sim.counters.port[w.port_index(spine, f"Ethernet{k}"), cf.P_OUT_OCTETS]
           for k in (3, 4)]
    assert max(out) > 2 * min(out)


@pytest.mark.parametrize("target", ["agg1", "z2-spine1", "z3-leaf1"])
def test_buffer_misconfig_on_any_switch_lowers_its_thresholds(target: str) -> None:
    sc = _sc([_fault("buffer_misconfig", target, xoff_fraction=0.05)])
    sim = Simulation(sc)
    w, ph = sim.wiring, sim.physics
    feeds = np.flatnonzero(w.port_device[w.peer] == w.device_index(target))
    slot = int(ph.slot[3])
    before = ph._xoff[feeds * ph.n_act + slot].copy()
    sim.run_until(START + 0.05)
    after = ph._xoff[feeds * ph.n_act + slot]
    assert after == pytest.approx(before * 0.05)
    assert after.max() < (BufferProfile().deep_spine_xoff_bytes if "spine" in target
                          else BufferProfile().xoff_bytes)


def test_a_deadlock_cycle_across_tiers_freezes_every_link_of_it() -> None:
    cycle = ["z1-leaf1~z1-spine1", "agg1~z1-spine1", "agg1~z1-spine2", "z1-leaf1~z1-spine2"]
    sim, b = _run(_sc([_fault("pfc_deadlock", cycle[0], cycle=cycle)]))
    # walking z1-leaf1 -> z1-spine1 -> agg1 -> z1-spine2 -> z1-leaf1, each egress is paused
    for port in ("z1-leaf1:Ethernet3", "z1-spine1:Ethernet3", "agg1:Ethernet2",
                 "z1-spine2:Ethernet1"):
        assert _rate(sim, b, port, cf.Q_PFC_RX_US, 3) == pytest.approx(1e6, rel=0.01)
        assert _rate(sim, b, port, cf.Q_TX_OCTETS, 3) < 1e3


def test_a_storm_in_zone_two_pauses_an_aggregation_switch_and_spines_of_other_zones() -> None:
    sim, b = _run(_sc([_fault("pfc_storm", "host5", priority=3)]))
    assert _rate(sim, b, "z2-leaf1:Ethernet1", cf.Q_PFC_RX_US, 3) == pytest.approx(1e6, rel=0.01)
    aggs_paused = sum(_rate(sim, b, f"agg{a}:Ethernet{k}", cf.Q_PFC_RX_US, 3)
                      for a in (1, 2) for k in (3, 4))
    assert aggs_paused > 0
    other_zones = sum(_rate(sim, b, f"z{z}-spine{s}:Ethernet{k}", cf.Q_PFC_RX_US, 3)
                      for z in (1, 3) for s in (1, 2) for k in (3, 4))
    assert other_zones > 0


def test_incast_and_slow_receiver_on_zone_hosts() -> None:
    sim, b = _run(_sc([_fault("incast", "host9", fan_in=6)],
                      traffic=[{"pattern": "none"}]))
    assert _rate(sim, b, "z3-leaf1:Ethernet1", cf.P_OUT_OCTETS) == pytest.approx(50e9, rel=0.02)
    sim, b = _run(_sc([_fault("slow_receiver", "host6", drain_fraction=0.3)]))
    paused = _rate(sim, b, "z2-leaf1:Ethernet2", cf.Q_PFC_RX_US, 3) / 1e6
    assert 0.6 < paused < 0.8


def test_the_routing_observations_hold_across_zones() -> None:
    """The Meta RoCE observations on a three-tier fabric, small (docs/lab.md has the full size):
    E-ECMP beats 5-tuple ECMP, TE places every QP so the spread vanishes."""
    from lab.compare import CompareSpec, run_compare

    res = run_compare(CompareSpec(spines=2, leaves=4, hosts_per_leaf=4, uplinks_per_pair=2,
                                  zones=2, aggs=4, trials=6, message_bytes=2e8, dt=2e-4),
                      ("ecmp", "eecmp", "te"))
    m = res["modes"]
    assert m["eecmp"]["mean_x_ideal"] < 0.9 * m["ecmp"]["mean_x_ideal"]
    assert m["te"]["mean_x_ideal"] < 1.05
    assert m["te"]["spread_p90_p10_x_ideal"] < 0.05
