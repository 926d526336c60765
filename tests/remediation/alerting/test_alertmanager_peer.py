"""The ``alertmanager`` receiver against a real Prometheus Alertmanager (v0.35.0, built from its
Go module by ``tests/services/alertmanager.sh`` and started by ``run-tests.sh``; its address is
``ROCEWATCH_TEST_ALERTMANAGER``): labels its routes can match, times on its own clock whatever
the fabric's clock says, resolves it honours at once; and a run at speed 10 through the real
path whose incident appears there and resolves on time."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import httpx
import pytest

from pipeline.config import PluginSpec
from pipeline.model import Severity
from pipeline.times import parse_instant
from remediation.alerting.assemble import build_receivers
from remediation.alerting.notification import Notification
from tests.conftest import need_service
from tests.remediation.support import make_alert

NS = 1_000_000_000


@pytest.fixture(scope="module")
def alertmanager() -> str:
    host, port = need_service("ROCEWATCH_TEST_ALERTMANAGER", "Prometheus Alertmanager")
    return f"http://{host}:{port}"


def held(am: str, **labels: str) -> list[dict[str, Any]]:
    """The alerts Alertmanager holds active whose labels include ``labels``."""
    answer = httpx.get(f"{am}/api/v2/alerts", timeout=5).json()
    return [a for a in answer if labels.items() <= a["labels"].items()]


def until(what: Any, wall_s: float = 15.0) -> Any:
    deadline = time.monotonic() + wall_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    return what()


def test_labels_routes_match_and_times_on_its_own_clock(alertmanager):
    """The fabric clock 29 s ahead of Alertmanager's (a compressed run, or a clock off): still
    nothing in its future, and a resolve ends the alert there at once."""
    receiver = build_receivers([PluginSpec.model_validate(
        {"type": "alertmanager", "name": "am", "url": alertmanager, "resend": "1m"})])["am"]
    entity = f"leaf1~spine{uuid.uuid4().hex[:8]}"
    wall = time.time_ns()
    event_now = wall + 29 * NS  # the fabric's clock, ahead of the receiver's

    def notify(*alerts: Any, at_ns: int) -> None:
        """Flushed at event time ``at_ns``, the fabric's "now" when it is handed over."""
        receiver.send(Notification("am", "g", {}, tuple(alerts), at_ns, "new_alerts",
                                   wall_offset_ns=time.time_ns() - at_ns))

    warning = make_alert("faulty_link", entity, severity=Severity.WARNING)
    warning = warning.model_copy(update={"starts_ns": event_now - 5 * NS,
                                         "updated_ns": event_now})
    notify(warning, at_ns=event_now)
    [alert] = until(lambda: held(alertmanager, entity=entity))
    assert alert["labels"] == {"alertname": "faulty_link", "entity": entity,
                               "severity": "warning", "root_cause": "true",
                               "entity_kind": "link"}
    seen_at = time.time_ns()
    assert parse_instant(alert["startsAt"], None) <= seen_at  # never in its future
    assert parse_instant(alert["startsAt"], None) >= wall - 6 * NS  # 5 s before its "now"
    # the incident escalates: a new label set there, and the old one ended in the same post
    critical = warning.model_copy(update={"severity": Severity.CRITICAL,
                                          "updated_ns": event_now + NS})
    notify(critical, at_ns=event_now + NS)
    [alert] = until(lambda: [a for a in held(alertmanager, entity=entity)
                             if a["labels"]["severity"] == "critical"])
    assert [a["receivers"] for a in held(alertmanager, entity=entity)] == [[{"name": "oncall"}]]
    # resolved in event time a moment ago: gone from Alertmanager at once
    resolved = critical.model_copy(update={"ends_ns": event_now + 2 * NS,
                                           "updated_ns": event_now + 2 * NS})
    notify(resolved, at_ns=event_now + 2 * NS)
    assert until(lambda: not held(alertmanager, entity=entity), 5.0)


STORM = """\
format: 1
name: alertmanager-storm
seed: 31
duration_s: 100
sample_interval_s: 1
fabric: {spines: 2, leaves: 2, hosts_per_leaf: 2, uplinks_per_pair: 1, link_gbps: 400,
         host_gbps: 400}
routing: ecmp
traffic:
  - {pattern: alltoall, hosts: all, load: 0.3, qps_per_flow: 4}
faults:
  - {kind: pfc_storm, target: host3, at_s: 15, until_s: 35, params: {priority: 3}}
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_at_speed_10_resolves_in_alertmanager_on_time(alertmanager, tmp_path, chdb_dir):
    from rocewatch.scenario.runner import run_scenario

    (tmp_path / "storm.yaml").write_text(STORM)
    (tmp_path / "config.yaml").write_text(json.dumps({"remediation": {
        "receivers": [{"type": "alertmanager", "name": "am", "url": alertmanager,
                       "resend": "10s", "ends_after": "5m"}],
        "route": {"group_wait": "0s", "group_interval": "10s"}}}))
    seen: list[tuple[int, dict[str, Any]]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for a in held(alertmanager, alertname="pfc_storm", entity="host3"):
                seen.append((time.time_ns(), a))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.time_ns()
    try:
        report = run_scenario(tmp_path / "storm.yaml", speed=10.0,
                              config_path=str(tmp_path / "config.yaml"), chdb_path=chdb_dir)
    finally:
        done.set()
        watcher.join(5)
    storm = [a for a in report["alerts"] if a["kind"] == "pfc_storm" and a["root_cause"]]
    assert storm and storm[0]["entity"] == "host3", report["alerts"]
    assert storm[0]["last_s"] < 80, "rocewatch resolved it well before the run ended"
    ours = [(t, a) for t, a in seen if parse_instant(a["startsAt"], None) >= started - 60 * NS]
    assert ours, "the incident never reached Alertmanager"
    _, alert = ours[0]
    assert alert["labels"] == {"alertname": "pfc_storm", "entity": "host3",
                               "severity": "critical", "root_cause": "true",
                               "entity_kind": "host"}
    assert alert["receivers"] == [{"name": "oncall"}]  # the severity="critical" route
    assert all(parse_instant(a["startsAt"], None) <= t for t, a in ours)
    # rocewatch resolved it: Alertmanager holds it no more (with event-time endsAt, ahead of
    # its clock at speed 10, it kept such an alert active for minutes after the run)
    assert not held(alertmanager, alertname="pfc_storm", entity="host3")
