"""The lossless buffer configuration each switch serves over gNMI Get is the one the simulation
runs with: deep-buffer spines in three tiers, and a ``buffer_misconfig`` fault's lowered XOFF for
exactly its window (issue 10 item 5; paths in docs/telemetry-dialects.md). Also: a lab whose
agents run on a sample of its switches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pygnmi.client import gNMIclient

from lab.buffers import BufferProfile
from lab.runtime import Lab
from pipeline.errors import LabError
from tests.lab.conftest import gnmi_target, make_scenario

FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "zones": 2, "aggs": 2,
          "profiles": ["openconfig", "sonic"]}      # agg1 openconfig, agg2 sonic, z1-spine1 oc...
MISCONFIG = [{"kind": "buffer_misconfig", "target": t, "at_s": 30, "until_s": 60,
              "params": {"xoff_fraction": 0.1}} for t in ("agg1", "z1-spine2")]


@pytest.fixture(scope="module")
def sampled_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    sc = make_scenario(fabric=FABRIC, faults=MISCONFIG, duration_s=600)
    lab = Lab(sc, speed=10.0, out_dir=tmp_path_factory.mktemp("buf"),
              agents_for=["agg1", "z1-spine2", "z2-leaf1"])
    lab.start()
    try:
        assert lab.wait_until(1.0, timeout=60)
        yield lab
    finally:
        lab.stop()


def _oc_xoff(lab: Lab, switch: str) -> int:
    host, port = gnmi_target(lab, switch)
    with gNMIclient(target=(host, port), username="admin", password="admin",
                    insecure=True) as gc:
        got = gc.get(path=["/qos/buffer/buffer-profiles/buffer-profile[name=lossless_pg]/config"],
                     encoding="json_ietf")
    return int(got["notification"][0]["update"][0]["val"]["xoff"])


def _sonic_profile(lab: Lab, switch: str) -> dict[str, str]:
    host, port = gnmi_target(lab, switch)
    with gNMIclient(target=(host, port), username="admin", password="admin",
                    insecure=True) as gc:
        got = gc.get(path=["BUFFER_PROFILE/pg_lossless_profile"], target="CONFIG_DB",
                     encoding="json_ietf")
    val = got["notification"][0]["update"][0]["val"]
    return val if isinstance(val, dict) else json.loads(val)


def test_agents_run_on_the_sample_only(sampled_lab: Lab) -> None:
    names = [s["name"] for s in sampled_lab.agents()["switches"]]
    assert names == ["agg1", "z1-spine2", "z2-leaf1"]
    roles = [s["role"] for s in sampled_lab.agents()["switches"]]
    assert roles == ["agg", "spine", "leaf"]
    with pytest.raises(LabError, match="no switch"):
        Lab(make_scenario(fabric=FABRIC), out_dir=Path("/nonexistent"), agents_for=["spine9"])


def test_served_thresholds_follow_the_fault_window(sampled_lab: Lab) -> None:
    buf = BufferProfile()
    lab = sampled_lab
    # before the fault: shallow leaf and aggregation thresholds, a deep-buffer spine
    assert _oc_xoff(lab, "agg1") == round(buf.xoff_bytes)
    before = _sonic_profile(lab, "z1-spine2")
    assert int(before["xoff"]) == round(buf.deep_spine_xoff_bytes)
    assert int(before["size"]) == round(buf.headroom_bytes)
    assert _oc_xoff(lab, "z2-leaf1") == round(buf.xoff_bytes)
    assert lab.sim_time() < 30, "the reads before the fault took until it had begun"
    assert lab.wait_until(31.0, timeout=60)
    # during it: a tenth, on both switches the fault names, and nowhere else
    assert _oc_xoff(lab, "agg1") == round(0.1 * buf.xoff_bytes)
    during = _sonic_profile(lab, "z1-spine2")
    assert int(during["xoff"]) == round(0.1 * buf.deep_spine_xoff_bytes)
    assert int(during["xon"]) == round(0.1 * buf.deep_spine_xoff_bytes - buf.xon_band_bytes)
    assert _oc_xoff(lab, "z2-leaf1") == round(buf.xoff_bytes)
    # and back when it ends
    assert lab.wait_until(61.0, timeout=60)
    assert _oc_xoff(lab, "agg1") == round(buf.xoff_bytes)
    assert int(_sonic_profile(lab, "z1-spine2")["xoff"]) == round(buf.deep_spine_xoff_bytes)
