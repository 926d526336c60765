"""``rocewatch lab ...``: run, topology, compare and bench through click's test runner."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from rocewatch.cli.lab import lab
from tests.lab.conftest import SCENARIOS, scenario_dict

TINY = scenario_dict(duration_s=3, fabric={"spines": 1, "leaves": 2, "hosts_per_leaf": 1,
                                           "profiles": ["sonic"]})


def _write(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_topology_prints_json() -> None:
    out = CliRunner().invoke(lab, ["topology", str(SCENARIOS / "incast-host5.yaml")])
    assert out.exit_code == 0, out.output
    topo = json.loads(out.output)
    assert len(topo["links"]) == 32 and topo["hosts"][4] == {
        "name": "host5", "port": "leaf2:Ethernet1", "gbps": 400.0}


def test_run_serves_until_the_scenario_ends(tmp_path: Path) -> None:
    out = CliRunner().invoke(lab, ["run", str(_write(tmp_path, TINY)), "--speed", "20",
                                   "--out", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    assert "TE controller  http://127.0.0.1:" in out.output
    assert "leaf1      gnmi  127.0.0.1:" in out.output and "sonic" in out.output
    assert "scenario finished" in out.output
    assert (tmp_path / "out" / "agents.json").exists()


def test_bad_scenario_is_a_clear_error(tmp_path: Path) -> None:
    bad = dict(TINY, routing="ospf")
    out = CliRunner().invoke(lab, ["run", str(_write(tmp_path, bad))])
    assert out.exit_code == 2
    assert "routing: unknown routing 'ospf'" in out.output


def test_compare_prints_a_table() -> None:
    out = CliRunner().invoke(lab, ["compare", "--trials", "2", "--spines", "2", "--leaves", "2",
                                   "--hosts-per-leaf", "2", "--message-mb", "50",
                                   "--modes", "ecmp,te"])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[-2].startswith("ecmp")
    assert out.output.splitlines()[-1].startswith("te")
    bad = CliRunner().invoke(lab, ["compare", "--modes", "ospf"])
    assert bad.exit_code == 2


def test_bench_measures_a_small_fabric(tmp_path: Path) -> None:
    doc = dict(TINY, duration_s=3600)
    out = CliRunner().invoke(lab, ["bench", "--scenario", str(_write(tmp_path, doc)),
                                   "--seconds", "2", "--speed", "20", "--json",
                                   "--out", str(tmp_path / "bench")])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    # the speed reached depends on the machine's load: printed by the benchmark, not asserted
    assert res["switches"] == 3 and res["updates"] > 0 and res["achieved_speed"] > 0


def test_bench_sim_only_names_the_bottleneck() -> None:
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "30-3tier-control.yaml"
    res = CliRunner().invoke(lab, ["bench", "--scenario", str(scenario), "--sim-only",
                                   "--seconds", "1", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["switches"] == 19 and doc["switch_ports"] == 156
    assert doc["bottleneck"] in ("step", "tick", "publish")
    assert doc["simulated_s"] > 0 and doc["cpu_per_sim_s_total"] > 0
