"""The shared topology: naming, port numbering, lookups, JSON round trip."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import ConfigError
from pipeline.topology.model import Port, Topology, link_id, spine_leaf


def test_names_follow_the_scenario_format() -> None:
    topo = spine_leaf(spines=4, leaves=8, hosts_per_leaf=4, uplinks_per_pair=1)
    assert topo.spines == ("spine1", "spine2", "spine3", "spine4")
    assert topo.leaves[-1] == "leaf8"
    assert [h.name for h in topo.hosts[:5]] == ["host1", "host2", "host3", "host4", "host5"]
    # hosts are numbered leaf by leaf; host-facing ports come first on each leaf
    assert str(topo.host_by_name["host5"].port) == "leaf2:Ethernet1"
    # then the uplinks, spine by spine: leaf2's uplink to spine1 is its 5th port
    link = topo.link_by_id["leaf2~spine1"]
    assert (str(link.a), str(link.b)) == ("leaf2:Ethernet5", "spine1:Ethernet2")
    assert len(topo.links) == 32


def test_parallel_links_are_numbered_from_two() -> None:
    topo = spine_leaf(spines=2, leaves=2, hosts_per_leaf=2, uplinks_per_pair=2)
    ids = [ln.id for ln in topo.links if ln.a.device == "leaf1"]
    assert ids == ["leaf1~spine1", "leaf1~spine1#2", "leaf1~spine2", "leaf1~spine2#2"]
    assert link_id("spine2", "leaf1", 2) == "leaf1~spine2#2"
    # the second parallel link to spine2 lands on the spine's 2nd port for leaf1
    assert str(topo.link_by_id["leaf1~spine2#2"].b) == "spine2:Ethernet2"


def test_lookups_by_port() -> None:
    topo = spine_leaf(spines=2, leaves=4, hosts_per_leaf=2)
    assert topo.peer(Port("leaf1", "Ethernet3")) == Port("spine1", "Ethernet1")
    assert topo.peer(Port("leaf1", "Ethernet1")) is None  # a host port has no switch peer
    assert topo.entity_of(Port("leaf1", "Ethernet1")) == "host1"
    assert topo.entity_of(Port("spine2", "Ethernet4")) == "leaf4~spine2"
    assert topo.entity_of(Port("leaf1", "Ethernet99")) == "leaf1:Ethernet99"
    assert [str(p) for p in topo.ports("leaf1")] == [
        "leaf1:Ethernet1", "leaf1:Ethernet2", "leaf1:Ethernet3", "leaf1:Ethernet4"]
    assert len(topo.uplinks("leaf3")) == 2


def test_a_label_looks_up_what_its_port_plugs_into() -> None:
    topo = spine_leaf(2, 3, 2, uplinks_per_pair=2)
    for device in [*topo.spines, *topo.leaves]:
        for port in topo.ports(device):
            at = topo.attached(str(port))
            assert at is not None and at.what == topo.attachment(port)
            assert at.far == topo.peer(port)
            assert at.far_label == (str(at.far) if at.far is not None else "")
    assert topo.attached("leaf1:Ethernet99") is None
    assert topo.attached("not a port") is None and topo.attached("") is None


def test_json_round_trip() -> None:
    topo = spine_leaf(spines=2, leaves=3, hosts_per_leaf=3, uplinks_per_pair=2, link_gbps=100)
    again = Topology.from_json(json.loads(json.dumps(topo.to_json())))
    assert again == topo


def test_bad_input_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        spine_leaf(spines=0, leaves=2, hosts_per_leaf=1)
    with pytest.raises(ConfigError, match="not a port"):
        Port.parse("leaf1-Ethernet1")
    with pytest.raises(ConfigError, match="missing"):
        Topology.from_json({"links": [{"id": "x"}], "hosts": []})


# ---------------------------------------------------------------------------- three tiers

def _three_tier(**over: object) -> Topology:
    from pipeline.topology.shape import FabricShape

    args: dict[str, object] = {"spines": 2, "leaves": 3, "hosts_per_leaf": 2,
                               "uplinks_per_pair": 1, "zones": 3, "aggs": 2}
    args.update(over)
    return FabricShape(**args).build()  # type: ignore[arg-type]


def test_three_tier_names_and_port_numbering() -> None:
    topo = _three_tier(agg_uplinks_per_spine=2)
    assert topo.tiers == 3
    assert topo.aggs == ("agg1", "agg2")
    assert topo.spines[:3] == ("z1-spine1", "z1-spine2", "z2-spine1")
    assert topo.leaves[3] == "z2-leaf1"
    assert topo.switches[:3] == ("agg1", "agg2", "z1-spine1")
    # hosts numbered zone by zone, leaf by leaf: zone 2's first leaf holds host7 and host8
    assert str(topo.host_by_name["host7"].port) == "z2-leaf1:Ethernet1"
    assert [h.name for h in topo.zone_hosts(3)] == [f"host{n}" for n in range(13, 19)]
    # a leaf: hosts, then its zone's spines
    ln = topo.link_by_id["z2-leaf3~z2-spine2"]
    assert (str(ln.a), str(ln.b)) == ("z2-leaf3:Ethernet4", "z2-spine2:Ethernet3")
    # a spine: its leaves, then every aggregation switch (parallel links numbered from two)
    ln = topo.link_by_id["agg2~z3-spine1#2"]
    assert (str(ln.a), str(ln.b)) == ("agg2:Ethernet10", "z3-spine1:Ethernet7")
    assert [x.id for x in topo.agg_uplinks("z3-spine1")] == [
        "agg1~z3-spine1", "agg1~z3-spine1#2", "agg2~z3-spine1", "agg2~z3-spine1#2"]
    assert len(topo.ports("agg1")) == 3 * 2 * 2
    assert topo.role("agg1") == "agg" and topo.tier("agg1") == 3
    assert topo.tier("z1-spine2") == 2 and topo.tier("z3-leaf1") == 1 and topo.tier("host1") == 0
    assert topo.zone("z3-leaf1") == 3 and topo.zone("host7") == 2 and topo.zone("agg1") is None
    assert topo.zones == (1, 2, 3)
    assert topo.zone_switches(2) == ("z2-spine1", "z2-spine2", "z2-leaf1", "z2-leaf2",
                                     "z2-leaf3")
    assert [x.id for x in topo.up_links("z1-leaf1")] == ["z1-leaf1~z1-spine1",
                                                         "z1-leaf1~z1-spine2"]
    assert len(topo.down_links("z1-spine1")) == 3 and len(topo.down_links("agg1")) == 12


def test_one_zone_keeps_two_tier_names() -> None:
    from pipeline.topology.shape import FabricShape

    topo = FabricShape(spines=2, leaves=2, hosts_per_leaf=1, aggs=2).build()
    assert topo.spines == ("spine1", "spine2") and topo.aggs == ("agg1", "agg2")
    assert "agg1~spine2" in topo.link_by_id
    assert topo.zones == (1,)


def test_reference_fabric_counts() -> None:
    from pipeline.topology.capacity import (
        describe,
        path_shape,
        tier_oversubscription,
        zone_capacity_gbps,
    )
    from pipeline.topology.shape import FabricShape

    shape = FabricShape(spines=16, leaves=96, hosts_per_leaf=32, uplinks_per_pair=2, zones=8,
                        aggs=32)
    topo = shape.build()
    assert len(topo.switches) == shape.n_switches == 928
    assert topo.n_switch_ports == shape.n_switch_ports == 81_920
    assert sum(len(topo.ports(s)) for s in topo.switches) == 81_920
    assert len(topo.hosts) == 24_576
    assert len(topo.links) == 8 * 96 * 16 * 2 + 8 * 16 * 32
    assert tier_oversubscription(topo) == {"leaf": 1.0, "spine": 6.0}
    assert shape.oversubscription() == {"leaf": 1.0, "spine": 6.0}
    assert zone_capacity_gbps(topo, 5) == 16 * 32 * 400.0
    same_leaf = path_shape(topo, "host1", "host2")
    same_zone = path_shape(topo, "host1", "host33")
    cross = path_shape(topo, "host1", "host24576")
    assert same_leaf.roles == ("leaf",) and same_leaf.count == 1
    assert same_zone.roles == ("leaf", "spine", "leaf") and same_zone.count == 16 * 2 * 2
    assert cross.cross_zone and cross.count == 16 * 2 * 32 * 16 * 2
    assert "928 switches" in describe(topo) and "81,920 switch ports" in describe(topo)


def test_three_tier_json_round_trip_and_shape_only() -> None:
    topo = _three_tier(agg_gbps=800.0)
    doc = json.loads(json.dumps(topo.to_json()))
    assert doc["aggs"] == ["agg1", "agg2"] and doc["shape"]["zones"] == 3
    assert Topology.from_json(doc) == topo
    assert Topology.from_json({"shape": doc["shape"]}) == topo
    # lists left out are inferred from the names, in topology order
    bare = {"links": doc["links"], "hosts": doc["hosts"]}
    again = Topology.from_json(bare)
    assert again.aggs == topo.aggs and again.spines == topo.spines
    assert again.leaves == topo.leaves
    assert topo.link_by_id["agg1~z1-spine1"].gbps == 800.0


def test_two_tier_json_is_unchanged() -> None:
    doc = spine_leaf(spines=2, leaves=2, hosts_per_leaf=1).to_json()
    assert list(doc) == ["spines", "leaves", "links", "hosts"]


def test_zones_need_aggregation_switches() -> None:
    from pipeline.topology.shape import FabricShape

    with pytest.raises(ConfigError, match="aggregation"):
        FabricShape(spines=2, leaves=2, hosts_per_leaf=1, zones=2)


def test_names_parse_back() -> None:
    from pipeline.topology.names import natural_key, parse_name, parse_zone, switch_name

    assert switch_name("leaf", 2, 3) == "z3-leaf2" and switch_name("agg", 4) == "agg4"
    parsed = parse_name("z3-spine12")
    assert parsed is not None and (parsed.role, parsed.zone, parsed.number) == ("spine", 3, 12)
    assert parse_name("tor7") is None and parse_zone("z12") == 12 and parse_zone("x") is None
    names = ["z2-leaf10", "z2-leaf9", "agg2", "z1-spine1", "z10-leaf1"]
    assert sorted(names, key=natural_key) == ["agg2", "z1-spine1", "z2-leaf9", "z2-leaf10",
                                              "z10-leaf1"]


def test_building_the_reference_fabric_is_fast() -> None:
    import time

    from pipeline.topology.shape import FabricShape

    t0 = time.perf_counter()
    topo = FabricShape(spines=16, leaves=96, hosts_per_leaf=32, uplinks_per_pair=2, zones=8,
                       aggs=32).build()
    ports = sum(len(topo.ports(s)) for s in topo.switches)
    # a benchmark prints its number rather than asserting on time
    print(f"reference fabric built and indexed in {time.perf_counter() - t0:.2f} s "
          f"({ports:,} ports)")
    assert ports == 81_920
