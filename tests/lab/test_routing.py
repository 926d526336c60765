"""Routing modes and traffic patterns: entropy, pinning, resilience, collisions, determinism."""

from __future__ import annotations

import numpy as np

from lab.compare import CompareSpec, run_compare
from lab.routing import RouteInputs, Router
from lab.scenario.spec import Scenario
from lab.traffic import build_entries, build_flows, ring_order
from lab.wiring import TIER_LEAF_UP, TIER_SPINE_DOWN, build_wiring
from tests.lab.conftest import make_scenario


def _router(sc: Scenario) -> tuple[Router, np.ndarray]:
    w = build_wiring(sc.topology())
    flows = build_flows(sc, w)
    entries = build_entries(flows, w, sc.seed)
    return Router(w, flows, entries, sc.routing, sc.seed), np.ones(w.n_links, dtype=bool)


def _sc(routing: str, qps: int = 8, **kw: object) -> Scenario:
    return make_scenario(routing=routing, fabric={"spines": 4, "leaves": 4, "hosts_per_leaf": 4},
                         traffic=[{"pattern": "allreduce", "hosts": "all", "load": 0.5,
                                   "qps_per_flow": qps}], **kw)


def test_ecmp_keeps_a_flows_qps_together_and_eecmp_spreads_them() -> None:
    for routing, spread in (("ecmp", False), ("eecmp", True)):
        router, usable = _router(_sc(routing))
        ch, ok = router.routes(RouteInputs(usable))
        assert ok.all()
        e = router.entries
        paths_per_flow = [len({tuple(ch[i]) for i in np.flatnonzero(e.flow == f)})
                          for f in range(len(router.flows))]
        if spread:
            assert max(paths_per_flow) > 1 and np.mean(paths_per_flow) > 2
        else:
            assert set(paths_per_flow) == {1}


def test_pinned_routes_by_destination() -> None:
    router, usable = _router(_sc("pinned"))
    ch, _ = router.routes(RouteInputs(usable))
    w, e = router.wiring, router.entries
    for i in range(len(e)):
        member = int(np.flatnonzero(w.leaf_uplinks[e.src_leaf[i]] == ch[i, 1])[0])
        assert member == e.dst[i] % w.leaf_uplinks.shape[1]


def test_ring_ranks_alternate_leaves() -> None:
    w = build_wiring(_sc("ecmp").topology())
    ring = ring_order(list(range(16)), w.host_leaf)
    leaves = [int(w.host_leaf[h]) for h in ring]
    assert all(a != b for a, b in zip(leaves, leaves[1:] + leaves[:1], strict=True))


def test_groups_are_resilient_to_a_dead_member() -> None:
    router, usable = _router(_sc("eecmp"))
    before, _ = router.routes(RouteInputs(usable))
    dead = router.wiring.link_index("leaf1~spine2")
    usable[dead] = False
    after, ok = router.routes(RouteInputs(usable))
    assert ok.all()
    w = router.wiring
    dead_ports = set(w.link_channels(dead))
    on_dead = np.array([before[i, TIER_LEAF_UP] in dead_ports
                        or before[i, TIER_SPINE_DOWN] in dead_ports
                        for i in range(len(before))])
    assert on_dead.any()
    # entries that did not use the dead link keep their path; the others avoid it now
    assert (after[~on_dead] == before[~on_dead]).all()
    assert not np.isin(after[on_dead][:, [TIER_LEAF_UP, TIER_SPINE_DOWN]], list(dead_ports)).any()


def test_spine_without_a_link_to_the_destination_is_avoided() -> None:
    router, usable = _router(_sc("ecmp"))
    usable[router.wiring.link_index("leaf3~spine1")] = False
    ch, ok = router.routes(RouteInputs(usable))
    w, e = router.wiring, router.entries
    to_leaf3 = (e.dst_leaf == 2) & (e.src_leaf != 2)
    spine1_ports = set(w.switch_ports[w.device_index("spine1")].tolist())
    assert ok.all() and not np.isin(ch[to_leaf3, TIER_SPINE_DOWN], list(spine1_ports)).any()


def test_isolated_leaf_makes_entries_unroutable() -> None:
    router, usable = _router(_sc("ecmp"))
    for s in range(1, 5):
        usable[router.wiring.link_index(f"leaf2~spine{s}")] = False
    _ch, ok = router.routes(RouteInputs(usable))
    e = router.entries
    touches = ((e.src_leaf == 1) | (e.dst_leaf == 1)) & (e.src_leaf != e.dst_leaf)
    assert (~ok[touches]).all() and ok[~touches].all()


def test_collision_pins_the_heaviest_flows_of_a_leaf_to_one_uplink() -> None:
    router, usable = _router(_sc("eecmp"))
    ch, _ = router.routes(RouteInputs(usable, collisions=[(0, 2)]))
    e = router.entries
    mine = np.flatnonzero((e.src_leaf == 0) & (e.dst_leaf != 0))
    ranked = mine[np.isin(e.flow[mine], np.unique(e.flow[mine])[:4])]
    assert len({int(c) for c in ch[ranked[router._flow_rank[ranked] < 2], 1]}) == 1


def test_eecmp_beats_ecmp_and_te_removes_the_spread() -> None:
    """The Meta RoCE observations, small: docs/lab.md has the full-size numbers."""
    res = run_compare(CompareSpec(spines=4, leaves=4, hosts_per_leaf=4, trials=6,
                                  message_bytes=2e8, dt=2e-4), ("ecmp", "eecmp", "te"))
    m = res["modes"]
    assert m["eecmp"]["mean_x_ideal"] < 0.85 * m["ecmp"]["mean_x_ideal"]
    assert m["te"]["mean_x_ideal"] < 1.05
    assert m["te"]["spread_p90_p10_x_ideal"] < 0.05
    assert m["te"]["rank_skew_x_ideal"] < m["eecmp"]["rank_skew_x_ideal"]
