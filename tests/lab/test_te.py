"""The TE controller's HTTP API (docs/te-controller.md) and its effect on the simulated traffic."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from lab import counters as cf
from lab.runtime import Lab
from lab.te.cspf import isolates, plan_paths
from lab.traffic import build_entries, build_flows
from lab.wiring import build_wiring
from tests.lab.conftest import make_scenario

BODY = {"reason": "faulty_link: FCS errors", "requested_by": "pytest",
        "evidence": {"fcs_per_s": 1200.0}}


@pytest.fixture(scope="module")
def te_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    sc = make_scenario(name="te", duration_s=3600, routing="te",
                       fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
                       traffic=[{"pattern": "alltoall", "hosts": "all", "load": 0.6,
                                 "qps_per_flow": 4}])
    lab = Lab(sc, speed=20.0, out_dir=tmp_path_factory.mktemp("te"))
    lab.start()
    yield lab
    lab.stop()


def _out_octets(lab: Lab, device: str, port: str) -> float:
    return float(lab.snapshot()[lab.layout.port_index(lab.wiring.port_index(device, port),
                                                      cf.P_OUT_OCTETS)])


def _rate(lab: Lab, device: str, port: str, span: float = 1.0) -> float:
    lab.wait_until(lab.sim_time() + 0.2, timeout=30)
    a, t0 = _out_octets(lab, device, port), lab.sim_time()
    lab.wait_until(t0 + span, timeout=30)
    return (_out_octets(lab, device, port) - a) / (lab.sim_time() - t0)


def test_health_and_state(te_lab: Lab) -> None:
    with httpx.Client(base_url=te_lab.te_url, timeout=10) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        state = http.get("/v1/state").json()
    assert state["routing"] == "te" and state["paths_version"] >= 1
    assert [ln["id"] for ln in state["links"]] == ["leaf1~spine1", "leaf1~spine2",
                                                   "leaf2~spine1", "leaf2~spine2"]
    link = state["links"][0]
    assert link["a"] == "leaf1:Ethernet3" and link["b"] == "spine1:Ethernet1"
    assert link["oper"] == "up" and link["drained"] is False and link["drain"] is None
    planned = [ln["planned_gbps"]["a_to_b"] for ln in state["links"]
               if ln["id"].startswith("leaf1")]
    assert planned[0] == pytest.approx(planned[1], rel=0.01)   # CSPF splits evenly
    assert abs(state["sim_time_ns"] - (te_lab.epoch_ns + state["sim_time_s"] * 1e9)) < 1e3


def test_drain_moves_traffic_off_the_link_and_undrain_brings_it_back(te_lab: Lab) -> None:
    assert _rate(te_lab, "leaf1", "Ethernet3") > 1e9
    with httpx.Client(base_url=te_lab.te_url, timeout=10) as http:
        r = http.post("/v1/links/leaf1~spine1/drain", json=BODY)
        assert r.status_code == 200
        body = r.json()
        assert body["drained"] is True and body["changed"] is True
        assert body["link"]["drain"]["evidence"] == BODY["evidence"]
        assert body["link"]["planned_gbps"] == {"a_to_b": 0.0, "b_to_a": 0.0}
        again = http.post("/v1/links/leaf1~spine1/drain", json=BODY).json()
        assert again["changed"] is False and again["drained"] is True
        # traffic left the link; the link itself stays up
        assert _rate(te_lab, "leaf1", "Ethernet3") == 0
        assert _rate(te_lab, "leaf1", "Ethernet4") > 1e9
        link = http.get("/v1/links/leaf1~spine1").json()
        assert link["oper"] == "up" and link["drained"] is True
        only = http.get("/v1/state", params={"links": "drained"}).json()
        assert [ln["id"] for ln in only["links"]] == ["leaf1~spine1"] == only["drained"]
        assert only["links"][0]["drain"]["requested_by"] == BODY["requested_by"]
        assert http.get("/v1/state", params={"links": "some"}).status_code == 422
        # the last uplink of leaf1 cannot go as well
        refused = http.post("/v1/links/leaf1~spine2/drain", json=BODY)
        assert refused.status_code == 409 and "leaf1" in refused.json()["error"]
        r = http.post("/v1/links/leaf1~spine1/undrain",
                      json={"reason": "repaired", "requested_by": "pytest"})
        assert r.status_code == 200 and r.json()["drained"] is False
        state = http.get("/v1/state").json()
        assert state["drained"] == []
        assert [h["action"] for h in state["history"]][-3:] == ["drain", "drain", "undrain"]
    assert _rate(te_lab, "leaf1", "Ethernet3") > 1e9


def test_bad_requests(te_lab: Lab) -> None:
    with httpx.Client(base_url=te_lab.te_url, timeout=10) as http:
        assert http.post("/v1/links/leaf9~spine1/drain", json=BODY).status_code == 404
        assert http.post("/v1/links/host1/drain", json=BODY).status_code == 404
        assert http.get("/v1/links/nope").status_code == 404
        assert http.post("/v1/links/leaf1~spine1/drain",
                         json={"reason": "x"}).status_code == 422
        assert http.post("/v1/links/leaf1~spine1/drain",
                         json={"reason": "", "requested_by": "me"}).status_code == 422


def test_link_failure_triggers_recomputation(te_lab: Lab) -> None:
    with httpx.Client(base_url=te_lab.te_url, timeout=10) as http:
        before = http.get("/v1/state").json()["paths_version"]
        te_lab.set_admin("leaf2", "Ethernet4", False)      # leaf2~spine2 goes down
        deadline = time.monotonic() + 20      # the controller polls link state
        while True:
            state = http.get("/v1/state").json()
            if state["paths_version"] > before or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        link = next(ln for ln in state["links"] if ln["id"] == "leaf2~spine2")
        assert link["oper"] == "down" and state["paths_version"] > before
        assert link["planned_gbps"] == {"a_to_b": 0.0, "b_to_a": 0.0}
        te_lab.set_admin("leaf2", "Ethernet4", True)


def test_cspf_balances_qps_and_respects_unusable_links() -> None:
    sc = make_scenario(routing="te", fabric={"spines": 4, "leaves": 4, "hosts_per_leaf": 4},
                       traffic=[{"pattern": "allreduce", "hosts": "all", "load": 1.0,
                                 "qps_per_flow": 4}])
    w = build_wiring(sc.topology())
    flows = build_flows(sc, w)
    entries = build_entries(flows, w, sc.seed)
    demand = flows.bps[entries.flow] / 8 * entries.share
    usable = np.ones(w.n_links, dtype=bool)
    plan = plan_paths(w, entries, demand, usable)
    up = w.leaf_uplinks.ravel()
    assert plan.load[up] == pytest.approx(np.full(up.size, plan.load[up].mean()))
    usable[w.link_index("leaf1~spine1")] = False
    plan = plan_paths(w, entries, demand, usable)
    assert plan.load[w.port_index("leaf1", "Ethernet5")] == 0
    assert isolates(w, usable) is None
    for s in range(1, 5):
        usable[w.link_index(f"leaf2~spine{s}")] = False
    assert isolates(w, usable) == "would isolate leaf2 (no usable uplink left)"
