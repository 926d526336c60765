"""Scenario files: every example loads; every field and fault kind is validated strictly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.scenario.load import load_scenario, parse_scenario
from lab.sim.simulation import Simulation
from pipeline.errors import ConfigError
from pipeline.kinds import FAULT_KINDS
from tests.lab.conftest import SCENARIOS, scenario_dict


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_examples_load(path: Path) -> None:
    sc = load_scenario(path)
    assert sc.name and sc.duration_s > 0
    for entry in sc.truth():
        assert set(entry) == {"kind", "target", "start_s", "end_s"}
        assert entry["start_s"] < entry["end_s"] <= sc.duration_s


def test_defaults_and_truth_end_is_duration_when_open() -> None:
    sc = parse_scenario({"format": 1, "name": "n", "seed": 0, "duration_s": 30,
                         "fabric": {"spines": 1, "leaves": 2, "hosts_per_leaf": 1},
                         "faults": [{"kind": "link_down", "target": "leaf1~spine1", "at_s": 5}]})
    assert sc.routing == "ecmp" and sc.sample_interval_s == 1 and sc.traffic == ()
    assert sc.fabric.link_gbps == 400 and sc.fabric.profiles == ("openconfig",)
    assert sc.fabric.agents.gnmi == 1.0
    assert sc.truth() == [{"kind": "link_down", "target": "leaf1~spine1", "start_s": 5,
                           "end_s": 30}]


def test_leaf_and_list_host_selectors() -> None:
    sc = parse_scenario(scenario_dict(traffic=[
        {"pattern": "incast", "hosts": ["host4", "host1", "host2"]},
        {"pattern": "alltoall", "hosts": "leaf2"}]))
    assert sc.traffic[0].hosts == ("host4", "host1", "host2")
    assert sc.traffic[1].hosts == ("host3", "host4")


def _err(doc: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_scenario(doc)
    return str(info.value)


@pytest.mark.parametrize(("change", "where"), [
    ({"colour": "red"}, "colour"),
    ({"format": 2}, "format"),
    ({"format": True}, "format"),
    ({"seed": "7"}, "seed"),
    ({"seed": -1}, "seed"),
    ({"duration_s": 0}, "duration_s"),
    ({"sample_interval_s": 0}, "sample_interval_s"),
    ({"routing": "ospf"}, "routing"),
    ({"name": ""}, "name"),
    ({"fabric": {"spines": 0}}, "fabric.spines"),
    ({"fabric": {"leaves": 1.5}}, "fabric.leaves"),
    ({"fabric": {"link_gbps": -400}}, "fabric.link_gbps"),
    ({"fabric": {"vendor": "x"}}, "fabric.vendor"),
    ({"fabric": {"agents": {"gnmi": 0.7, "snmp": 0.7}}}, "fabric.agents"),
    ({"fabric": {"agents": {"netconf": 1}}}, "fabric.agents.netconf"),
    ({"fabric": {"profiles": ["openconfig", "junos"]}}, "fabric.profiles[1]"),
    ({"traffic": [{"pattern": "broadcast"}]}, "traffic[0].pattern"),
    ({"traffic": [{"pattern": "alltoall", "load": 1.5}]}, "traffic[0].load"),
    ({"traffic": [{"pattern": "alltoall", "qps_per_flow": 0}]}, "traffic[0].qps_per_flow"),
    ({"traffic": [{"pattern": "alltoall", "hosts": ["host1", "host99"]}]}, "traffic[0].hosts[1]"),
    ({"traffic": [{"pattern": "alltoall", "hosts": ["host1", "host1"]}]}, "traffic[0].hosts[1]"),
    ({"traffic": [{"pattern": "allreduce", "hosts": ["host1"]}]}, "traffic[0].hosts"),
    ({"traffic": [{"pattern": "alltoall", "hosts": "spine1"}]}, "traffic[0].hosts"),
    ({"traffic": [{"pattern": "alltoall", "flows": 3}]}, "traffic[0].flows"),
    ({"traffic": {"pattern": "alltoall"}}, "traffic"),
])
def test_bad_fields_name_their_key_path(change: dict[str, Any], where: str) -> None:
    msg = _err(scenario_dict(**change))
    assert msg.startswith(where + ":"), msg


def _fault(**f: Any) -> dict[str, Any]:
    base = {"kind": "link_down", "target": "leaf1~spine1", "at_s": 10}
    base.update(f)
    return scenario_dict(faults=[base])


@pytest.mark.parametrize(("fault", "where"), [
    ({"kind": "meteor"}, "faults[0].kind"),
    ({"at_s": 60}, "faults[0].at_s"),
    ({"at_s": -1}, "faults[0].at_s"),
    ({"until_s": 5}, "faults[0].until_s"),
    ({"until_s": 61}, "faults[0].until_s"),
    ({"params": {"x": 1}}, "faults[0].params.x"),
    ({"target": "leaf1~spine9"}, "faults[0].target"),
    ({"severity": 3}, "faults[0].severity"),
    ({"kind": "pfc_storm", "target": "leaf1~spine1"}, "faults[0].target"),
    ({"kind": "pfc_storm", "target": "host1", "params": {"priority": 8}},
     "faults[0].params.priority"),
    ({"kind": "incast", "target": "host1", "params": {}}, "faults[0].params.fan_in"),
    ({"kind": "incast", "target": "host1", "params": {"fan_in": 4}}, "faults[0].params.fan_in"),
    ({"kind": "slow_receiver", "target": "host1", "params": {"drain_fraction": 1.0}},
     "faults[0].params.drain_fraction"),
    ({"kind": "link_corruption", "params": {"rate": 0}}, "faults[0].params.rate"),
    ({"kind": "link_corruption", "params": {"rate": 1e-4, "direction": "up"}},
     "faults[0].params.direction"),
    ({"kind": "link_flap", "params": {"period_s": 5, "down_s": 5}}, "faults[0].params.down_s"),
    ({"kind": "link_flap", "params": {"period_s": 5}}, "faults[0].params.down_s"),
    ({"kind": "optics_degrade", "params": {"start_rate": 1e-4, "end_rate": 1e-6}},
     "faults[0].params.end_rate"),
    ({"kind": "ecmp_collision", "target": "spine1", "params": {"flows": 2}}, "faults[0].target"),
    ({"kind": "ecmp_collision", "target": "leaf1", "params": {"flows": 0}},
     "faults[0].params.flows"),
    ({"kind": "buffer_misconfig", "target": "host1", "params": {"xoff_fraction": 0.1}},
     "faults[0].target"),
    ({"kind": "buffer_misconfig", "target": "leaf1", "params": {"xoff_fraction": 2}},
     "faults[0].params.xoff_fraction"),
    ({"kind": "pfc_deadlock", "params": {"cycle": ["leaf1~spine1", "leaf2~spine2"]}},
     "faults[0].params.cycle"),
    ({"kind": "pfc_deadlock", "target": "host1",
      "params": {"cycle": ["leaf1~spine1", "leaf2~spine1", "leaf2~spine2", "leaf1~spine2"]}},
     "faults[0].target"),
    ({"kind": "pfc_deadlock", "params": {"cycle": ["leaf1~spine1", "host1"]}},
     "faults[0].params.cycle[1]"),
])
def test_bad_faults_name_their_key_path(fault: dict[str, Any], where: str) -> None:
    msg = _err(_fault(**fault))
    assert msg.startswith(where + ":"), msg


def test_every_fault_kind_is_accepted_with_its_params() -> None:
    examples = {
        "pfc_storm": ("host1", {"priority": 3}), "incast": ("host1", {"fan_in": 2}),
        "slow_receiver": ("host2", {"drain_fraction": 0.3}),
        "link_corruption": ("leaf1~spine1", {"rate": 1e-5, "direction": "b_to_a"}),
        "link_flap": ("leaf2~spine1", {"period_s": 10, "down_s": 2}),
        "optics_degrade": ("host3", {"start_rate": 1e-7, "end_rate": 1e-4}),
        "ecmp_collision": ("leaf1", {"flows": 2}),
        "buffer_misconfig": ("spine2", {"xoff_fraction": 0.05}),
        "pfc_deadlock": ("leaf1~spine1", {"cycle": ["leaf1~spine1", "leaf2~spine1",
                                                    "leaf2~spine2", "leaf1~spine2"]}),
        "link_down": ("leaf2~spine2", {}),
        "miswired_cable": ("leaf1~spine1", {"swap_with": "leaf2~spine2"}),
        "lldp_neighbor_drop": ("leaf2~spine1", {"side": "a"}),
    }
    assert set(examples) == set(FAULT_KINDS)
    faults = [{"kind": k, "target": t, "at_s": 5 + i, "until_s": 50, "params": p}
              for i, (k, (t, p)) in enumerate(examples.items())]
    sc = parse_scenario(scenario_dict(faults=faults))
    assert [f["kind"] for f in sc.truth()] == list(examples)


def test_duplicate_yaml_keys_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("format: 1\nname: a\nname: b\nseed: 1\nduration_s: 5\n"
                    "fabric: {spines: 1, leaves: 1, hosts_per_leaf: 1}\n")
    with pytest.raises(ConfigError, match="duplicate key 'name'"):
        load_scenario(path)


def test_same_seed_same_run_and_seed_matters() -> None:
    def run(seed: int) -> np.ndarray:
        sim = Simulation(parse_scenario(scenario_dict(seed=seed, traffic=[
            {"pattern": "uniform", "hosts": "all", "load": 0.7, "qps_per_flow": 2}])))
        sim.run_until(3.0)
        return sim.counters.vector.copy()

    a, b, c = run(5), run(5), run(6)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


CYCLE = ["leaf1~spine1", "leaf2~spine1", "leaf2~spine2", "leaf1~spine2"]


@pytest.mark.parametrize(("target", "params"), [
    ("leaf2~spine1", {"cycle": CYCLE}),          # one link of the cycle
    (CYCLE, {}),                                  # the format's "target: links"
    (CYCLE[::-1], {"cycle": CYCLE}),              # the same cycle, either way round
    (",".join(CYCLE), {"cycle": CYCLE}),          # the comma-joined form reports use
])
def test_a_deadlock_target_may_be_the_cycle_itself(target: Any, params: dict[str, Any]) -> None:
    fault = {"kind": "pfc_deadlock", "target": target, "at_s": 5, "params": params}
    sc = parse_scenario(scenario_dict(faults=[fault]))
    assert set(sc.faults[0].params["cycle"]) == set(CYCLE)
    want = target if isinstance(target, str) else ",".join(target)
    assert sc.truth()[0]["target"] == want


@pytest.mark.parametrize(("target", "params"), [
    (CYCLE[:2], {}),                                        # not a closed cycle
    (CYCLE, {"cycle": ["leaf1~spine1", "leaf3~spine1", "leaf3~spine2", "leaf1~spine2"]}),
    ("leaf1~spine1,leaf2~spine1", {"cycle": CYCLE}),        # names part of the cycle only
])
def test_a_deadlock_target_must_agree_with_its_cycle(target: Any,
                                                     params: dict[str, Any]) -> None:
    fault = {"kind": "pfc_deadlock", "target": target, "at_s": 5, "params": params}
    assert "faults[0].target" in _err(scenario_dict(faults=[fault]))
