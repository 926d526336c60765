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
