"""The SNMP collector against snmpsim serving our recorded walk of an 8-port leaf."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from collectors.snmp.collector import SnmpCollector, SnmpOptions
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from tests.collectors.conftest import Running, Sink, wait_until, write_targets
from tests.collectors.snmp_agents import DATA, V3_AUTH, V3_PRIV, V3_USER, SnmpSim, free_udp_port

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_LEAF9", "leaf9")
    monkeypatch.setenv("T_BROKEN", "broken")
    monkeypatch.setenv("T_V3_AUTH", V3_AUTH)
    monkeypatch.setenv("T_V3_PRIV", V3_PRIV)
    monkeypatch.setenv("T_WRONG_PRIV", "not-the-priv-key")


def v2c(name: str, address: str, community_env: str, interval: float = 0.3,
        **snmp: Any) -> dict[str, Any]:
    return {"name": name, "address": address, "protocol": "snmp", "profile": "snmp",
            "sample_interval_s": interval,
            "snmp": {"version": "2c", "community_env": community_env, "timeout_s": 0.5,
                     "retries": 1, **snmp}}


def make(tmp_path: Path, sink: Sink, targets: list[dict[str, Any]]) -> Running:
    path = write_targets(tmp_path / "targets.yaml", targets)
    options = SnmpOptions(targets=str(path), bind_address="127.0.0.1")
    return Running(SnmpCollector("test", options, emit=sink))


def polls(rows: list[Any], device: str = "leaf9") -> list[int]:
    """The distinct sample times of a device's data rows (one per successful poll)."""
    return sorted({r[0] for r in rows if r[1] == device and not r[3].startswith("collector_")})


def series(rows: list[Any], metric: str, port: str, qual: int = -1,
           device: str = "leaf9") -> list[Any]:
    return [r for r in rows if r[1] == device and r[3] == metric and r[2] == port
            and r[4] == qual]


def test_the_recording_is_sorted_by_numeric_oid() -> None:
    """snmpsim silently serves nothing from a file out of numeric OID order."""
    lines = [line for line in (DATA / "leaf9.snmprec").read_text().splitlines()
             if line and not line.startswith("#")]
    oids = [tuple(int(p) for p in line.split("|")[0].split(".")) for line in lines]
    assert oids == sorted(oids) and len(set(oids)) == len(oids)


def test_polls_the_recorded_walk(tmp_path: Path, sink: Sink, snmpsim: SnmpSim) -> None:
    with make(tmp_path, sink, [v2c("leaf9", snmpsim.address, "T_LEAF9")]) as collector:
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 3, what="three polls")
        health = collector.health()["targets"]["leaf9"]
    ports = {r[2] for r in rows if r[1] == "leaf9" and r[3] == "if_in_octets"}
    assert ports == {f"Ethernet{i}" for i in range(1, 9)}
    octets = series(rows, "if_in_octets", "Ethernet3")
    assert [r[6] & FLAG_COUNTER32 for r in octets] == [0] * len(octets)  # Counter64
    assert octets[-1][5] > octets[0][5] > 10**12
    discards = series(rows, "if_in_discards", "Ethernet3")
    assert discards and all(r[6] & FLAG_COUNTER32 for r in discards)   # Counter32
    assert series(rows, "if_speed", "Ethernet1")[0][5] == 400_000 * 1e6
    assert series(rows, "if_last_change", "Ethernet2")[0][5] == pytest.approx(20.0)
    assert series(rows, "if_oper_status", "Ethernet8")[0][5] == 2
    pfc = {r[4] for r in rows if r[3] == "pfc_rx_frames" and r[2] == "Ethernet1"}
    assert pfc == set(range(8))
    assert series(rows, "pfc_rx_frames", "Ethernet1", 3)[-1][5] > 0
    queues = {r[4] for r in rows if r[3] == "queue_tx_pkts" and r[2] == "Ethernet1"}
    assert queues == set(range(8))  # csqIfQosGroupStats counts queues from 1
    assert not series(rows, "queue_tx_pkts", "Ethernet1", 0) or \
        series(rows, "queue_tx_octets", "Ethernet1", 7)
    # the recording has no hrSystemDate: collector clock, and the health says so
    assert health["clock"] == "collector"
    assert health["errors"]["no_device_clock"] == 1
    # bad rows are counted and dropped; their neighbours still come through
    assert {"wrong_type", "no_such_instance", "no_such_object", "unknown_ifindex"} <= set(
        health["errors"])
    assert not series(rows, "if_in_errors", "Ethernet3")
    assert not series(rows, "if_in_errors", "Ethernet4")
    assert series(rows, "if_in_errors", "Ethernet5")
    assert not series(rows, "if_out_errors", "Ethernet6") and series(rows, "if_out_errors",
                                                                    "Ethernet7")
    assert not any(r[2] == "" and r[3] == "if_in_discards" for r in rows)
    assert health["up"] and health["expected"] > 300


def test_counter32_wrap_is_flagged_not_reset(tmp_path: Path, sink: Sink,
                                             snmpsim: SnmpSim) -> None:
    def wrapped(rows: list[Any]) -> bool:
        values = [r[5] for r in series(rows, "if_in_errors", "Ethernet2")]
        return any(b < a for a, b in itertools.pairwise(values))

    with make(tmp_path, sink, [v2c("leaf9", snmpsim.address, "T_LEAF9", interval=0.25)]):
        rows = sink.wait_for(wrapped, timeout=20, what="ifInErrors.2 wrapping at 2**32")
    errors = series(rows, "if_in_errors", "Ethernet2")
    assert all(r[6] == FLAG_COUNTER32 for r in errors)  # wrapped, flagged 32-bit, no reset
    assert max(r[5] for r in errors) < 2**32


def test_reboot_marks_counter_resets(tmp_path: Path, sink: Sink, snmpsim: SnmpSim) -> None:
    with make(tmp_path, sink, [v2c("leaf9", snmpsim.address, "T_LEAF9")]):
        before = len(polls(sink.wait_for(lambda rows: len(polls(rows)) >= 2, what="polls")))
        snmpsim.restart()
        rows = sink.wait_for(lambda rows: any(r[3] == "counter_reset" for r in rows)
                             and len(polls(rows)) >= before + 3, what="polls after the reboot")
    reset_at = next(r[0] for r in rows if r[3] == "counter_reset")
    at_reset = [r for r in rows if r[0] == reset_at and r[3] == "if_in_octets"]
    assert at_reset and all(r[6] & FLAG_RESET for r in at_reset)
    assert all(r[6] & FLAG_RESET for r in rows if r[0] == reset_at and r[3] == "if_in_discards")
    assert not any(r[6] & FLAG_RESET for r in rows if r[0] == reset_at and r[3] == "if_speed")
    after = [r for r in rows if r[0] > reset_at and r[3] == "if_in_octets"]
    assert after and not any(r[6] & FLAG_RESET for r in after)
    assert sum(1 for r in rows if r[3] == "counter_reset") == 1
    assert not any(r[6] & FLAG_RESET for r in rows if r[0] < reset_at)


def test_v3_auth_priv(tmp_path: Path, sink: Sink, snmpsim: SnmpSim) -> None:
    target = {"name": "leaf9", "address": snmpsim.address, "protocol": "snmp",
              "profile": "snmp", "sample_interval_s": 0.5,
              "snmp": {"version": "3", "user": V3_USER, "auth_protocol": "sha",
                       "auth_key_env": "T_V3_AUTH", "priv_protocol": "aes",
                       "priv_key_env": "T_V3_PRIV", "context": "leaf9", "timeout_s": 1}}
    wrong = {**target, "name": "wrongkey",
             "snmp": {**target["snmp"], "priv_key_env": "T_WRONG_PRIV"}}
    with make(tmp_path, sink, [target, wrong]) as collector:
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 2, what="v3 polls")
        wait_until(lambda: collector.health()["targets"]["wrongkey"]["errors"], "a v3 error")
        health = collector.health()["targets"]
    assert {r[2] for r in rows if r[3] == "if_in_octets"} == {f"Ethernet{i}" for i in range(1, 9)}
    assert not polls(rows, "wrongkey")
    assert not health["wrongkey"]["up"]


def test_failures_never_block_other_targets(tmp_path: Path, sink: Sink,
                                            snmpsim: SnmpSim) -> None:
    dead = f"127.0.0.1:{free_udp_port()}"  # nobody answers here
    targets = [v2c("leaf9", snmpsim.address, "T_LEAF9", interval=0.3),
               v2c("broken", snmpsim.address, "T_BROKEN", interval=0.3),
               # each attempt waits 2 x 4 s for an answer that never comes
               v2c("dead", dead, "T_LEAF9", interval=0.3, timeout_s=4.0, retries=1)]
    with make(tmp_path, sink, targets) as collector:
        sink.wait_for(lambda rows: len(polls(rows)) >= 2, what="two polls of the healthy target")
        # a loop the dead target held up could not have polled leaf9 twice before the dead
        # target's first attempt timed out
        assert "timeout" not in collector.health()["targets"]["dead"]["errors"]
        wait_until(lambda: "timeout" in collector.health()["targets"]["dead"]["errors"],
                   "the dead target's timeout", timeout=30)
        rows = sink.wait_for(lambda rows: len(polls(rows)) >= 4 and any(
            r[1] == "dead" and r[3] == "collector_up" for r in rows), timeout=40,
            what="polls of the healthy target and the dead one reported down")
        health = collector.health()["targets"]
    assert "timeout" in health["dead"]["errors"] and not health["dead"]["up"]
    assert "snmp_error" in health["broken"]["errors"] and not health["broken"]["up"]
    assert not polls(rows, "broken") and not polls(rows, "dead")
    down = [r for r in rows if r[1] == "dead" and r[3] == "collector_up"]
    assert down and all(r[5] == 0 for r in down)
    received = [r for r in rows if r[1] == "dead" and r[3] == "collector_received"]
    assert received and all(r[5] == 0 for r in received)
