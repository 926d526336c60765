"""``rocewatch topology discover`` on a running lab reproduces ``rocewatch lab topology`` exactly
(two tiers and three, every dialect and SNMP), and ``--check`` names a miswired cable."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.runtime import Lab
from lab.scenario.load import load_scenario

TWO_TIER: dict[str, Any] = {
    "format": 1, "name": "discover-2tier", "seed": 2, "duration_s": 3600,
    "fabric": {"spines": 2, "leaves": 3, "hosts_per_leaf": 2, "uplinks_per_pair": 2,
               "agents": {"gnmi": 0.6, "snmp": 0.4},
               "profiles": ["openconfig", "arista", "sonic"]},
    "traffic": [{"pattern": "none"}],
}
THREE_TIER: dict[str, Any] = {
    "format": 1, "name": "discover-3tier", "seed": 3, "duration_s": 3600,
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 1, "zones": 2, "aggs": 2,
               "agg_gbps": 800, "agents": {"gnmi": 0.5, "snmp": 0.5},
               "profiles": ["sonic", "openconfig", "arista"]},
    "traffic": [{"pattern": "none"}],
}


def rocewatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocewatch", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=180, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def _running(tmp: Path, doc: dict[str, Any]) -> Iterator[tuple[Lab, Path, Path]]:
    scenario = tmp / f"{doc['name']}.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    lab = Lab(load_scenario(scenario), speed=10.0, out_dir=tmp / "lab")
    lab.start()
    try:
        assert lab.wait_until(0.5, timeout=60)
        agents = tmp / "lab" / "agents.json"
        config = tmp / "rocewatch.yaml"
        config.write_text(yaml.safe_dump({"collectors": [
            {"type": "gnmi", "name": "g", "agents": str(agents)},
            {"type": "snmp", "name": "s", "agents": str(agents)}]}))
        yield lab, scenario, config
    finally:
        lab.stop()


@pytest.fixture(params=[TWO_TIER, THREE_TIER], ids=["two-tier", "three-tier"])
def fabric(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Lab, Path, Path]]:
    yield from _running(tmp_path, request.param)


def test_discover_reproduces_the_lab_topology_exactly(fabric: tuple[Lab, Path, Path],
                                                      tmp_path: Path) -> None:
    lab, scenario, config = fabric
    out = tmp_path / "discovered.json"
    run = rocewatch("topology", "discover", "-c", str(config), "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    found = json.loads(out.read_text())
    shown = rocewatch("lab", "topology", str(scenario), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    declared = json.loads(shown.stdout)
    assert found["links"] == declared["links"]
    assert found == declared == lab.topology.to_json()
    n = len(lab.topology.switches)
    assert f"discovered from {n} of {n} devices" in run.stderr
    assert "unreadable" not in run.stderr and "one end only" not in run.stderr
    # against the declared topology: nothing to say
    config.write_text(config.read_text() + f"topology: {tmp_path / 'lab' / 'topology.json'}\n")
    check = rocewatch("topology", "discover", "-c", str(config), "--check", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout) == declared


def test_check_names_a_miswired_cable(tmp_path: Path) -> None:
    doc = {**TWO_TIER, "name": "discover-miswired",
           "faults": [{"kind": "miswired_cable", "target": "leaf1~spine1", "at_s": 0,
                       "params": {"swap_with": "leaf3~spine2#2"}}]}
    for lab, _scenario, config in _running(tmp_path, doc):
        declared = tmp_path / "lab" / "topology.json"
        config.write_text(config.read_text() + f"topology: {declared}\n")
        run = rocewatch("topology", "discover", "-c", str(config), "--check", cwd=tmp_path)
        assert run.returncode != 0
        assert "mismatch (miswired): leaf1~spine1,leaf3~spine2#2:" in run.stderr
        link = lab.topology.link_by_id["leaf1~spine1"]
        other = lab.topology.link_by_id["leaf3~spine2#2"]
        assert f"{link.a} -> {other.b}" in run.stderr
        # what the devices describe is the cabling as it is
        found = json.loads(run.stdout)
        by_a = {ln["a"]: (ln["id"], ln["b"]) for ln in found["links"]}
        assert by_a[str(link.a)] == ("leaf1~spine2", str(other.b))   # leaf1's lowest port to it
        assert len(found["links"]) == len(lab.topology.links)
