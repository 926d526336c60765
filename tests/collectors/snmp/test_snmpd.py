"""The SNMP collector against net-snmp's snmpd: v2c and v3 authPriv on loopback, and 64
interfaces in a network namespace."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from collectors.snmp.collector import SnmpCollector, SnmpOptions
from pipeline.model import FLAG_COUNTER32
from tests.collectors.conftest import Running, Sink, write_targets
from tests.collectors.snmp_agents import V3_AUTH, V3_PRIV, V3_USER, NetNs, Snmpd, run_in_netns

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_COMMUNITY", "rocewatch-ro")
    monkeypatch.setenv("T_V3_AUTH", V3_AUTH)
    monkeypatch.setenv("T_V3_PRIV", V3_PRIV)


def target(address: str, name: str = "host1", interval: float = 0.3, **snmp: Any) -> dict[str, Any]:
    auth = snmp or {"version": "2c", "community_env": "T_COMMUNITY"}
    return {"name": name, "address": address, "protocol": "snmp", "profile": "snmp",
            "sample_interval_s": interval, "snmp": {"timeout_s": 1.0, "retries": 1, **auth}}


def collector(tmp_path: Path, sink: Sink, targets: list[dict[str, Any]]) -> SnmpCollector:
    path = write_targets(tmp_path / "targets.yaml", targets)
    return SnmpCollector("test", SnmpOptions(targets=str(path), bind_address="127.0.0.1"),
                         emit=sink)


def polls(rows: list[Any], device: str = "host1") -> list[int]:
    return sorted({r[0] for r in rows if r[1] == device and not r[3].startswith("collector_")})


def test_v2c_with_the_device_clock(tmp_path: Path, sink: Sink, snmpd: Snmpd) -> None:
    with Running(collector(tmp_path, sink, [target(snmpd.address)])) as running:
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 3, what="three polls of snmpd")
        health = running.health()["targets"]["host1"]
    assert health["clock"] == "device" and health["up"]
    stamps = polls(rows)
    # hrSystemDate anchored to sysUpTime: the device's clock, in step with ours on this machine
    assert abs(stamps[-1] - time.time_ns()) < 5e9
    assert all(b > a for a, b in itertools.pairwise(stamps))
    ports = {r[2] for r in rows if r[3] == "if_in_octets"}
    assert "lo" in ports
    lo = [r for r in rows if r[2] == "lo" and r[3] == "if_in_octets"]
    assert lo[-1][5] >= lo[0][5] > 0  # our own polls cross lo
    assert all(r[6] & FLAG_COUNTER32 for r in rows if r[3] == "if_in_discards")
    assert not any(r[6] & FLAG_COUNTER32 for r in rows if r[3] == "if_in_octets")
    assert {r[5] for r in rows if r[3] == "if_admin_status"} <= {1.0, 2.0}
    # snmpd has no CISCO-PFC-EXT-MIB: those columns are simply empty, not errors
    assert not any(r[3].startswith("pfc_") for r in rows)
    assert set(health["errors"]) <= {"no_such_object"}


def test_v3_auth_priv(tmp_path: Path, sink: Sink, snmpd: Snmpd) -> None:
    v3 = target(snmpd.address, version="3", user=V3_USER, auth_protocol="sha",
                auth_key_env="T_V3_AUTH", priv_protocol="aes", priv_key_env="T_V3_PRIV")
    with Running(collector(tmp_path, sink, [v3])) as running:
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 2, what="v3 polls of snmpd")
        health = running.health()["targets"]["host1"]
    assert health["up"] and health["clock"] == "device"
    assert {r[2] for r in rows if r[3] == "if_in_octets"} >= {"lo"}


def test_sixty_four_interfaces_in_a_namespace(tmp_path: Path, sink: Sink,
                                              netns_snmpd: tuple[NetNs, Snmpd]) -> None:
    ns, agent = netns_snmpd
    path = write_targets(tmp_path / "targets.yaml", [target(agent.address, interval=0.3)])
    snmp = SnmpCollector("test", SnmpOptions(targets=str(path), bind_address="127.0.0.1",
                                             ifname_refresh_s=0.5), emit=sink)
    stop = threading.Event()
    thread = threading.Thread(target=run_in_netns, args=(ns.name, lambda: snmp.run(stop)))
    thread.start()
    try:
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 2, what="polls inside the netns")
        last = polls(rows)[-1]
        ports = {r[2] for r in rows if r[0] == last and r[3] == "if_oper_status"}
        assert ports == {"lo", *(f"Ethernet{i}" for i in range(1, 65))}
        # an interface that appears later is named once the cache is read again
        subprocess.run(["ip", "-n", ns.name, "link", "add", "Ethernet65", "type", "veth",
                        "peer", "name", "Ethernet66"], check=True)
        rows = sink.wait_for(lambda rows: any(r[2] == "Ethernet66" for r in rows),
                             what="the new interface by name")
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()
    assert snmp.health()["targets"]["host1"]["varbinds_total"] > 64 * 12
