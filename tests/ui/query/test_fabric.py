"""The fabric at scale through the query layer: the hierarchy's index, health rolled up zone by
zone, an incident's pause tree across the aggregation tier, and the heat map, on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.errors import QueryError
from pipeline.rates.rule import per_second
from pipeline.rates.sql import per_second_sql
from pipeline.store.base import literal
from pipeline.topology.model import spine_leaf
from pipeline.topology.shape import FabricShape
from tests.ui.three_tier import (
    CLIMB,
    CORRUPT,
    DRAIN_RUN,
    DRAINED,
    ROOT_HOST,
    STORM_PFC,
    write_storm_fabric,
)
from ui.query.fabric_index import build_index
from ui.query.fabric_state import FabricState
from ui.query.layer import Query, StatusOptions

REFERENCE = FabricShape(spines=16, leaves=96, hosts_per_leaf=32, uplinks_per_pair=2, zones=8,
                        aggs=32)


def query(store: Any, **kw: Any) -> tuple[Query, Any]:
    fabric = write_storm_fabric(store, **kw)
    return Query(store, fabric.topology, options=StatusOptions(silent_after_s=3600)), fabric


def test_the_reference_fabric_is_zones_and_an_aggregation_tier() -> None:
    index = build_index(REFERENCE.build())
    assert (len(index.switches), len(index.port_names)) == (928, 81_920)
    assert [g.id for g in index.groups] == ["agg", *(f"z{z}" for z in range(1, 9))]
    agg, *zones = index.groups
    assert (agg.kind, len(agg.switches), agg.hosts) == ("aggregation", 32, 0)
    assert {(len(z.switches), z.hosts) for z in zones} == {(112, 3072)}
    # a link between tiers touches a switch of each; a host, its leaf; a port, its switch
    assert [index.switches[s] for s in index.switches_of("agg2~z3-spine1")] == [
        "agg2", "z3-spine1"]
    [leaf] = index.switches_of("host3073")
    assert index.switches[leaf] == "z2-leaf1"
    assert index.switches_of("z8-leaf96:Ethernet1") == (index.switch_idx["z8-leaf96"],)
    assert index.switches_of("nowhere") == ()
    ports = index.switch_ports[index.switch_idx["z1-spine1"]]
    assert len(ports) == 96 * 2 + 32  # two links to each leaf of its zone, one to each agg


def test_a_two_tier_fabric_is_one_group() -> None:
    index = build_index(spine_leaf(2, 4, 2))
    [group] = index.groups
    assert (group.id, group.kind, len(group.switches), group.hosts) == ("fabric", "fabric", 6, 8)


def test_health_rolls_up_worst_first(store: Any) -> None:
    q, _ = query(store)
    view = q.fabric()
    assert view.scope == "fabric" and view.tiers == 3
    levels = {g.id: g.level for g in view.groups}
    assert levels == {"z1": "critical", "z2": "critical", "agg": "warning"}
    assert [g.id for g in view.groups][2] == "agg"  # worst first
    z1 = next(g for g in view.groups if g.id == "z1")
    assert z1.worst[0].entity == ROOT_HOST and z1.worst[0].root_cause
    assert (z1.switches, z1.roles, z1.hosts) == (5, {"spine": 2, "leaf": 3}, 6)
    assert z1.levels == {"critical": 1, "warning": 1, "info": 2, "ok": 1}
    assert z1.drained == 1  # the drained link, once though both its ends are in z1
    by_name = {s.name: s for s in view.switches}
    assert len(by_name) == 12
    assert by_name["z1-leaf1"].level == "critical"
    # the storm's victims are warnings (the incident explains them), not red
    assert {by_name[sw].level for _, sw in CLIMB[1:]} == {"warning"}
    assert by_name["z1-leaf2"].level == "ok" and by_name["z1-leaf2"].worst is None
    assert by_name["z1-spine2"].drained == by_name["z1-leaf3"].drained == 1
    # a corrupting link colours both its ends
    assert by_name["z2-leaf3"].level == by_name["z2-spine2"].level == "critical"


def test_a_zone_and_a_switch(store: Any) -> None:
    q, fabric = query(store)
    zone = q.fabric(group="z1")
    assert zone.scope == "group" and zone.group is not None and zone.group.id == "z1"
    assert [s.name for s in zone.switches] == ["z1-spine1", "z1-spine2", "z1-leaf1", "z1-leaf2",
                                               "z1-leaf3"]
    one = q.fabric(switch="z1-spine1")
    assert one.scope == "switch" and one.switch is not None and one.switch.level == "warning"
    assert one.group is not None and one.group.id == "z1"
    ports = {p.port: p for p in one.ports}
    paused = ports["z1-spine1:Ethernet1"]
    assert (paused.entity, paused.peer, paused.level, paused.alert) == (
        "z1-leaf1~z1-spine1", "z1-leaf1", "warning", "pfc_paused")
    assert paused.values["pfc_rx"] == pytest.approx(STORM_PFC + 2)
    assert ports["z1-spine1:Ethernet2"].values["pfc_rx"] == pytest.approx(2)
    assert one.as_of_ns is not None and one.as_of_ns <= fabric.end_ns
    with pytest.raises(QueryError, match="not a switch"):
        q.fabric(switch="z9-leaf1")
    with pytest.raises(QueryError, match="not one of"):
        q.fabric(group="z7")


def test_the_pause_tree_climbs_over_the_aggregation_tier(store: Any) -> None:
    q, fabric = query(store)
    tree = q.fabric(incident=fabric.storm.fingerprint).tree
    assert tree is not None and (tree.incident, tree.entity, tree.root) == (
        "pfc_storm", ROOT_HOST, ROOT_HOST)
    depth = {n.name: n.depth for n in tree.nodes}
    assert depth == {ROOT_HOST: 0, **{sw: i + 1 for i, (_, sw) in enumerate(CLIMB)}}
    assert tree.nodes[0].name == ROOT_HOST and tree.nodes[0].level == "critical"
    hops = {e.link: (e.downstream, e.upstream) for e in tree.edges}
    expected = [ROOT_HOST] + [sw for _, sw in CLIMB]
    assert hops == {hop: (expected[i], expected[i + 1]) for i, (hop, _) in enumerate(CLIMB)}
    assert tree.groups == ["agg", "z1", "z2"]
    assert {n.group for n in tree.nodes if n.role == "agg"} == {"agg"}
    assert CORRUPT not in hops  # another incident's link is not in this tree
    with pytest.raises(QueryError, match="no firing incident"):
        q.fabric(incident="0" * 16)


def test_the_heat_map_ranks_searches_and_scopes(store: Any) -> None:
    q, fabric = query(store)
    heat = q.heatmap(sort="pfc_rx", top=5)
    assert heat.ports == heat.matched == fabric.topology.n_switch_ports
    assert {r.port for r in heat.rows} == set(fabric.paused_ports())
    col = [c.key for c in heat.columns].index("pfc_rx")
    assert all(r.values[col] == pytest.approx(STORM_PFC + 2) for r in heat.rows)
    root = next(r for r in heat.rows if r.entity == ROOT_HOST)
    assert (root.level, root.group, root.peer) == ("critical", "z1", ROOT_HOST)
    errors = q.heatmap(sort="errors", top=2)
    assert {r.entity for r in errors.rows} == {CORRUPT}
    # search names a port, its entity or what it reaches
    found = q.heatmap(search="agg2", top=500)
    assert found.matched == len(found.rows) == 2 * 4  # agg2's four ports, and their far ends
    assert all("agg2" in r.port or r.peer == "agg2" for r in found.rows)
    zone = q.heatmap(scope="z2", sort="util", top=500)
    assert {r.group for r in zone.rows} == {"z2"}
    util = [r.values[0] for r in zone.rows]
    assert util == sorted(util, reverse=True) and 0 < util[0] < 100
    switch = q.heatmap(scope="agg1", top=500)
    assert {r.port.split(":")[0] for r in switch.rows} == {"agg1"}
    with pytest.raises(QueryError, match="sort"):
        q.heatmap(sort="colour")
    with pytest.raises(QueryError, match="scope"):
        q.heatmap(scope="z3")


def test_the_status_on_three_tiers(store: Any) -> None:
    q, _ = query(store)
    status = q.status(top=3)
    assert status.counts["switch"] == {"ok": 12}
    assert status.counts["host"] == {"critical": 1, "ok": 11}
    assert status.counts["link"] == {"critical": 1, "warning": 4, "info": 1, "ok": 14}
    roots = [e.entity for e in status.entities if e.root_cause]
    assert set(roots) == {ROOT_HOST, CORRUPT}
    assert status.telemetry.state == "live" and status.telemetry.devices_seen == 12
    assert status.telemetry.stale_devices == []
    assert len(status.top_utilisation) == 3 and status.top_utilisation[0].util is not None


def test_rolled_minutes_and_raw_samples_give_the_same_port_values(store: Any) -> None:
    """Without a rolled minute the same measures come from the samples' latest rates."""
    fabric = write_storm_fabric(store)
    q = Query(store, fabric.topology, options=StatusOptions(silent_after_s=3600))
    index = build_index(fabric.topology)
    now = q.clock.now().now_ns
    rolled = q.fabric_state.snapshot(index, now)
    assert rolled.source.startswith("samples_1m")
    without = FabricState(store, lambda: fabric.topology, q.clock, lambda: [], q.limits,
                          q.options)
    samples = without.snapshot(index, now)
    assert samples.source.startswith("samples (")
    for key in ("in_bps", "out_bps", "pfc_rx", "pfc_tx", "ecn", "errors"):
        np.testing.assert_allclose(samples.values[key], rolled.values[key], rtol=1e-9,
                                   err_msg=key)


def test_per_second_in_sql_is_the_rules_division(store: Any) -> None:
    inc = [0.0, 5.0, 1e12 + 3, 7.0, 2.5]
    span = [0, 1_000_000_000, 3_000_000_007, -1, 9_999_999_999]
    sql = (f"SELECT {per_second_sql('i', 's')} AS r FROM (SELECT "
           f"{literal(inc)}[k + 1] AS i, [{', '.join(f'toInt64({v})' for v in span)}][k + 1] AS s "
           f"FROM (SELECT arrayJoin(range({len(inc)})) AS k)) ORDER BY i, s")
    got = np.asarray(store.query(sql)["r"], np.float64)
    order = sorted(range(len(inc)), key=lambda i: (inc[i], span[i]))
    want = per_second(np.array(inc)[order], np.array(span)[order])
    np.testing.assert_array_equal(got, want)  # bit for bit, NaN for an empty span


def test_a_drained_link_is_shown_drained_by_its_run_since_when(store: Any) -> None:
    q, fabric = query(store)
    status = q.status()
    [held] = status.drained
    assert (held.target, held.kind, held.state, held.origin, held.run) == (
        DRAINED, "link", "held", "runbook", DRAIN_RUN)
    assert held.since_ns == fabric.drained.since_ns
    assert f"maintenance by run {DRAIN_RUN}" in held.summary
    # its link_down, restated by detection, is information on a drained link, not an incident
    [down] = [e for e in status.entities if e.entity == DRAINED]
    assert (down.level, down.root_cause, down.drained) == ("info", False, held.summary)
    ports = {p.port: p for p in q.fabric(switch="z1-leaf3").ports}
    link = fabric.topology.link_by_id[DRAINED]
    assert ports[str(link.a)].drained == held.summary
    assert [p for p in ports.values() if p.drained] == [ports[str(link.a)]]
