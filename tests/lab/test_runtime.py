"""The Lab API others build on: lifecycle, files, time, inventory; nothing left behind."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from lab.runtime import Lab
from pipeline.errors import LabError
from pipeline.topology.model import Topology
from tests.lab.conftest import make_scenario


def _tiny(**kw: object) -> Lab:
    defaults: dict[str, object] = {"speed": 50.0}
    defaults.update(kw)
    sc = make_scenario(duration_s=20, fabric={"spines": 1, "leaves": 2, "hosts_per_leaf": 1,
                                              "agents": {"gnmi": 0.5, "snmp": 0.5}},
                       faults=[{"kind": "link_flap", "target": "leaf2~spine1", "at_s": 5,
                                "until_s": 15, "params": {"period_s": 5, "down_s": 1}},
                               {"kind": "link_down", "target": "host1", "at_s": 18}])
    return Lab(sc, **defaults)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone as far as we are concerned
    return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_lifecycle_files_time_and_cleanup(tmp_path: Path) -> None:
    threads_before = {t.ident for t in threading.enumerate()}
    lab = _tiny(out_dir=tmp_path)
    wall0 = time.time_ns()
    lab.start()
    try:
        assert abs(lab.epoch_ns - wall0) < 30e9
        assert isinstance(lab.topology, Topology)
        topo = json.loads((tmp_path / "topology.json").read_text())
        assert topo == lab.topology.to_json()
        truth = json.loads((tmp_path / "truth.json").read_text())
        assert truth == lab.truth() == [
            {"kind": "link_flap", "target": "leaf2~spine1", "start_s": 5, "end_s": 15},
            {"kind": "link_down", "target": "host1", "start_s": 18, "end_s": 20}]
        doc = json.loads((tmp_path / "agents.json").read_text())
        assert doc == lab.agents()
        assert set(doc) == {"scenario", "epoch_ns", "speed", "sample_interval_s", "duration_s",
                            "te_controller", "switches"}
        assert doc["epoch_ns"] == lab.epoch_ns and doc["te_controller"] == lab.te_url
        assert [s["name"] for s in doc["switches"]] == ["spine1", "leaf1", "leaf2"]
        spine, leaf1 = doc["switches"][0], doc["switches"][1]
        assert spine["role"] == "spine" and leaf1["role"] == "leaf"
        assert spine["snmp"] is None and set(spine["gnmi"]) == {
            "address", "profile", "tls", "username", "password"}
        assert leaf1["gnmi"] is None and leaf1["snmp"] == {
            "address": leaf1["snmp"]["address"], "version": "2c", "community": "rocewatch",
            "profile": "snmp"}
        t0 = lab.sim_time()
        assert lab.wait_until(t0 + 5.0, timeout=60)
        assert lab.sim_time() >= t0 + 5.0
        with pytest.raises(LabError):
            lab.wait_until(21.0)
        assert lab.wait_until(20.0, timeout=60)
        deadline = time.monotonic() + 10
        while not lab.finished and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lab.finished and lab.sim_time() == pytest.approx(20.0)
        pid = lab.simulator_pid
        assert pid is not None and _alive(pid)
    finally:
        lab.stop()
    lab.stop()   # idempotent
    assert not _alive(pid)
    leftover = [t for t in threading.enumerate() if t.ident not in threads_before]
    assert leftover == []


def test_thread_mode_and_snmp_v3_inventory(tmp_path: Path) -> None:
    with _tiny(out_dir=tmp_path, isolate=False, snmp_version="3") as lab:
        assert lab.simulator_pid is None
        assert lab.wait_until(1.0, timeout=30)
        snmp = lab.agents()["switches"][1]["snmp"]
        assert snmp["version"] == "3"
        assert {"user", "auth_protocol", "auth_key", "priv_protocol", "priv_key"} <= set(snmp)


def _free_base(span: int) -> int:
    for base in range(41000, 60000, 97):
        ok = True
        for port in range(base, base + span + 1):
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                with socket.socket(socket.AF_INET, kind) as s:
                    try:
                        s.bind(("127.0.0.1", port))
                    except OSError:
                        ok = False
        if ok:
            return base
    raise RuntimeError("no free port range")


def test_base_port_assigns_ports_in_topology_order(tmp_path: Path) -> None:
    base = _free_base(3)
    with _tiny(out_dir=tmp_path, base_port=base) as lab:
        doc = lab.agents()
        assert doc["te_controller"] == f"http://127.0.0.1:{base}"
        addrs = [(s["gnmi"] or s["snmp"])["address"] for s in doc["switches"]]
        assert addrs == [f"127.0.0.1:{base + 1 + i}" for i in range(3)]


def test_admin_helpers_and_bad_construction(tmp_path: Path) -> None:
    with pytest.raises(LabError):
        Lab(make_scenario(), speed=0)
    with pytest.raises(LabError):
        Lab(make_scenario(), tls="ssl")
    with pytest.raises(LabError):
        Lab(make_scenario()).sim_time()
    with _tiny(out_dir=tmp_path) as lab:
        lab.set_admin("leaf1", "Ethernet2", False)
        snap = lab.snapshot()
        p = lab.wiring.port_index("leaf1", "Ethernet2")
        from lab import counters as cf
        assert snap[lab.layout.port_index(p, cf.P_ADMIN)] == cf.OPER_DOWN
        assert snap[lab.layout.port_index(p, cf.P_OPER)] == cf.OPER_DOWN
