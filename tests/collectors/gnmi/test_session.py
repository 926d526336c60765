"""The gNMI collector against scripted targets: sessions, TLS, reconnects and bad input."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from pipeline.metrics import metric_id
from pipeline.rates.rule import Status, intervals
from tests.collectors.conftest import Running, Sink, wait_until, write_targets
from tests.collectors.gnmi_target import SYNC, ScriptedTarget, hold, notification
from tests.collectors.pki import Pki

T0 = 1_800_000_000_000_000_000


def uint(v: int) -> pb.TypedValue:
    return pb.TypedValue(uint_val=v)


def jstr(v: Any) -> pb.TypedValue:
    import json

    return pb.TypedValue(json_ietf_val=json.dumps(v).encode())


def counters(port: str) -> str:
    return f"/interfaces/interface[name={port}]/state/counters"


def gnmi_target(name: str, address: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "address": address, "protocol": "gnmi", "profile": "openconfig",
            "sample_interval_s": 0.2,
            "credentials": {"username_env": "T_GNMI_USER", "password_env": "T_GNMI_PASS"},
            **extra}


@pytest.fixture(autouse=True)
def _creds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_GNMI_USER", "admin")
    monkeypatch.setenv("T_GNMI_PASS", "admin")


def make(tmp_path: Path, sink: Sink, targets: list[dict[str, Any]], **opts: Any) -> Running:
    path = write_targets(tmp_path / "targets.yaml", targets)
    options = GnmiOptions(targets=str(path), flush_interval_s=0.05, backoff_initial_s=0.05,
                          backoff_max_s=0.2, connect_timeout_s=2, **opts)
    return Running(GnmiCollector("test", options, emit=sink))


def stream(count: int = 1000, step_ns: int = 200_000_000) -> Any:
    """A script: initial state, sync, then a counter update every 20 ms (wall)."""

    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        base = target.subscribes * 1000
        yield notification(T0, [(f"{counters('Ethernet1')}/in-octets", uint(base))])
        yield SYNC
        for i in range(1, count):
            time.sleep(0.02)
            yield notification(T0 + i * step_ns,
                               [(f"{counters('Ethernet1')}/in-octets", uint(base + i * 10))])
        yield from hold(target)

    return script


def octets(rows: list[Any], device: str = "leaf1") -> list[Any]:
    return [r for r in rows if r[1] == device and r[3] == "if_in_octets"]


def test_subscribes_stream_sample_and_on_change(tmp_path: Path, sink: Sink,
                                                gnmi_targets: list[ScriptedTarget]) -> None:
    target = ScriptedTarget(stream()).start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]):
        rows = sink.wait_for(lambda rows: len(octets(rows)) >= 3, what="three samples")
    request = target.requests[0].subscribe
    assert request.mode == pb.SubscriptionList.STREAM
    assert request.prefix.origin == "openconfig"
    assert request.encoding == pb.JSON_IETF
    modes = {"/".join(e.name for e in s.path.elem): s.mode for s in request.subscription}
    assert modes["interfaces/interface/state/counters"] == pb.SAMPLE
    assert modes["interfaces/interface/state/oper-status"] == pb.ON_CHANGE
    sample = next(s for s in request.subscription if s.mode == pb.SAMPLE)
    assert sample.sample_interval == 200_000_000
    assert dict(sample.path.elem[1].key) == {"name": "*"}
    got = octets(rows)
    assert got[0][0] == T0 and got[0][2] == "Ethernet1"  # the device's timestamp, not ours
    assert [r[0] for r in got] == sorted(r[0] for r in got)


def test_reconnects_after_the_target_restarts(tmp_path: Path, sink: Sink,
                                              gnmi_targets: list[ScriptedTarget]) -> None:
    target = ScriptedTarget(stream()).start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]) as collector:
        sink.wait_for(lambda rows: len(octets(rows)) >= 3, what="first session")
        port = target.port
        target.stop()
        health = collector.health()["targets"]["leaf1"]
        sink.wait_for(lambda rows: any(r[3] == "collector_up" and r[5] == 0 for r in rows),
                      what="collector_up = 0 while the target is down")
        # the restarted target begins again with its own counters
        again = ScriptedTarget(stream(), port=port)
        again.subscribes = 1
        again.start()
        gnmi_targets.append(again)
        rows = sink.wait_for(lambda rows: any(r[5] >= 2000 for r in octets(rows)),
                             what="samples from the second session")
        health = collector.health()["targets"]["leaf1"]
    assert health["connects"] >= 2
    assert health["errors"].get("stream_lost", 0) + health["errors"].get("connect_failed", 0) >= 1
    second = [r for r in octets(rows) if r[5] >= 2000]
    assert second


def test_counter_going_backwards_is_left_to_the_rate_rule(
        tmp_path: Path, sink: Sink, gnmi_targets: list[ScriptedTarget]) -> None:
    """The collector stamps no reset of its own (the order it received things in is not event
    time); the one rate rule reads the fall as a reset."""
    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        for i, value in enumerate([100, 200, 300, 5, 15]):
            yield notification(T0 + i * 200_000_000,
                               [(f"{counters('Ethernet1')}/in-octets", uint(value))])
        yield from hold(target)

    target = ScriptedTarget(script).start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]):
        rows = sink.wait_for(lambda rows: len(octets(rows)) >= 5, what="five samples")
    got = sorted(octets(rows))
    assert [(r[5], r[6]) for r in got] == [(100, 0), (200, 0), (300, 0), (5, 0), (15, 0)]
    judged = intervals(np.zeros(5, np.int64), np.array([r[0] for r in got], np.int64),
                       np.array([r[5] for r in got]), np.zeros(5, np.uint8), np.ones(5, bool))
    assert [Status(s) for s in judged.status] == [Status.FIRST, Status.OK, Status.OK,
                                                   Status.RESET, Status.OK]
    assert judged.increase[3] == 5


def test_tls_and_mutual_tls(tmp_path: Path, sink: Sink, pki: Pki,
                            gnmi_targets: list[ScriptedTarget]) -> None:
    server = (pki.server_cert.read_bytes(), pki.server_key.read_bytes())
    tls_only = ScriptedTarget(stream(), tls=(*server, None)).start()
    mutual = ScriptedTarget(stream(), tls=(*server, pki.ca.read_bytes())).start()
    wrong_ca = ScriptedTarget(stream(), tls=(*server, None)).start()
    gnmi_targets.extend([tls_only, mutual, wrong_ca])
    targets = [
        gnmi_target("tls", tls_only.address, tls={"ca": str(pki.ca)}),
        gnmi_target("mtls", mutual.address, tls={"ca": str(pki.ca), "cert": str(pki.client_cert),
                                                 "key": str(pki.client_key)}),
        gnmi_target("untrusted", wrong_ca.address, tls={"ca": str(pki.other_ca)}),
    ]
    with make(tmp_path, sink, targets) as collector:
        sink.wait_for(lambda rows: octets(rows, "tls") and octets(rows, "mtls"),
                      what="samples over TLS and mutual TLS")
        wait_until(lambda: collector.health()["targets"]["untrusted"]["errors"],
                   "the untrusted target's connect error")
        health = collector.health()["targets"]
    assert mutual.subscribes >= 1 and tls_only.subscribes >= 1
    assert wrong_ca.subscribes == 0, "a target with a certificate we do not trust was used"
    assert not health["untrusted"]["up"]
    assert health["untrusted"]["errors"]


def test_wrong_password_is_an_auth_error(tmp_path: Path, sink: Sink,
                                         gnmi_targets: list[ScriptedTarget]) -> None:
    target = ScriptedTarget(stream(), password="secret").start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]) as collector:
        wait_until(lambda: collector.health()["targets"]["leaf1"]["errors"], "an auth error")
        health = collector.health()["targets"]["leaf1"]
    assert "auth" in health["errors"], health
    assert "UNAUTHENTICATED" in health["last_error"]


def test_bad_input_is_counted_and_never_poisons_a_batch(
        tmp_path: Path, sink: Sink, gnmi_targets: list[ScriptedTarget]) -> None:
    good = f"{counters('Ethernet1')}/in-octets"

    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        yield b"\xff\xff\xff not a protobuf"
        yield notification(T0, [
            (good, uint(10)),
            (f"{counters('Ethernet1')}/out-octets", jstr("twelve")),          # wrong type
            (f"{counters('Ethernet1')}/in-pkts", pb.TypedValue(bytes_val=b"x")),  # wrong type
            ("/interfaces/interface[name=Ethernet1]/state/mystery", uint(3)),   # unknown path
            (f"{counters('Ethernet1')}/in-errors", pb.TypedValue(json_ietf_val=b"{bad json")),
            (f"{counters('Ethernet1')}/out-pkts", jstr("42")),                 # numeric string
            ("/interfaces/interface[name=Ethernet1]/state/oper-status", jstr("UP")),
            ("/interfaces/interface[name=Ethernet1]/state/admin-status", jstr("SIDEWAYS")),
        ])
        yield notification(0, [(good, uint(20))])                             # no timestamp
        yield pb.SubscribeResponse(error=pb.Error(message="boom")).SerializeToString()
        yield notification(T0 + 2, [(good, uint(30))])
        yield from hold(target)

    target = ScriptedTarget(script).start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]) as collector:
        rows = sink.wait_for(lambda rows: any(r[5] == 30 for r in octets(rows)),
                             what="the good update after the bad ones")
        errors = collector.health()["targets"]["leaf1"]["errors"]
    assert errors == {"malformed": 1, "wrong_type": 3, "unknown_path": 1, "malformed_json": 1,
                      "no_timestamp": 1, "target_error": 1}
    values = {(r[3], r[5]) for r in rows if r[1] == "leaf1"}
    assert {("if_in_octets", 10), ("if_out_pkts", 42), ("if_oper_status", 1),
            ("if_in_octets", 20), ("if_in_octets", 30)} <= values
    assert not any(r[3] in ("if_out_octets", "if_in_pkts", "if_in_errors", "if_admin_status")
                   for r in rows)


def test_silent_target_reports_no_data(tmp_path: Path, sink: Sink,
                                       gnmi_targets: list[ScriptedTarget]) -> None:
    released = threading.Event()

    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        yield notification(T0, [(f"{counters('Ethernet1')}/in-octets", uint(1))])
        yield SYNC
        yield from hold(target, released)  # connected, but says nothing more

    target = ScriptedTarget(script).start()
    gnmi_targets.append(target)
    try:
        with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]):
            rows = sink.wait_for(
                lambda rows: any(r[3] == "collector_up" and r[5] == 0 for r in rows),
                what="collector_up = 0 for the silent target")
    finally:
        released.set()
    health = [r for r in rows if r[1] == "leaf1" and r[3].startswith("collector_")]
    assert all(r[2] == "" for r in health)
    down_at = next(r[0] for r in health if r[3] == "collector_up" and r[5] == 0)
    received = [r for r in health if r[3] == "collector_received" and r[0] == down_at]
    assert received and received[0][5] == 0
    assert down_at > T0  # event time keeps moving while the target is silent
    assert metric_id("collector_up") >= 0


def test_hung_stream_is_reopened(tmp_path: Path, sink: Sink,
                                 gnmi_targets: list[ScriptedTarget]) -> None:
    released = threading.Event()

    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        yield notification(T0, [(f"{counters('Ethernet1')}/in-octets", uint(1))])
        yield from hold(target, released)

    target = ScriptedTarget(script).start()
    gnmi_targets.append(target)
    try:
        with make(tmp_path, sink, [gnmi_target("leaf1", target.address)], idle_intervals=2,
                  idle_min_s=0.3) as collector:
            wait_until(lambda: target.subscribes >= 2, "a second subscription")
            health = collector.health()["targets"]["leaf1"]
    finally:
        released.set()
    assert health["errors"].get("idle", 0) >= 1
    assert "stream_lost" not in health["errors"]  # the watchdog's own cancel is not a loss


def test_a_target_whose_paths_map_to_nothing_is_no_mapped_data(
        tmp_path: Path, sink: Sink, gnmi_targets: list[ScriptedTarget]) -> None:
    """It streams, but no path it sends is in the profile (issue 15): not up, and says why."""
    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        for i in range(1000):
            yield notification(T0 + i * 200_000_000,
                               [("/components/component[name=fan1]/state/speed", uint(i))])
            time.sleep(0.05)

    target = ScriptedTarget(script).start()
    gnmi_targets.append(target)
    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]) as collector:
        wait_until(lambda: collector.health()["targets"]["leaf1"]["state"] == "no_mapped_data",
                   "the no-mapped-data state")
        health = collector.health()
    assert not health["targets"]["leaf1"]["up"] and health["targets_up"] == 0
    assert health["targets"]["leaf1"]["connected"] and health["targets"]["leaf1"]["errors"][
        "unknown_path"] >= 1
    assert not [r for r in sink.rows() if not r[3].startswith("collector_")]
