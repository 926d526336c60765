"""Every receiver against a real loopback peer: exact payloads, retries, no retry on 4xx."""

from __future__ import annotations

import random
import socket
import threading
from email import message_from_bytes
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from pipeline.config import PluginSpec
from pipeline.errors import ConfigError, PluginError
from pipeline.model import fingerprint
from pipeline.retry import RetryPolicy
from remediation.alerting.assemble import build_receivers
from remediation.alerting.notification import Notification
from remediation.audit import Recorder
from remediation.receivers.delivery import Deliverer
from tests.remediation.support import at, make_alert


def notification(receiver: str, alerts: list[Any], when: float = 60,
                 reason: str = "new_alerts") -> Notification:
    return Notification(receiver, '{}:{alertname="faulty_link"}', {"alertname": "faulty_link"},
                        tuple(alerts), at(when), reason)  # type: ignore[arg-type]


def deliver(specs: list[dict[str, Any]], n: Notification) -> tuple[Any, list[float], list[Any]]:
    receivers = build_receivers([PluginSpec.model_validate(s) for s in specs], site="lab")
    recorder = Recorder(None, "actions")
    sleeps: list[float] = []
    failed: list[Notification] = []
    deliverer = Deliverer(receivers, recorder, on_failed=failed.append, sleep=sleeps.append,
                          seed=1)
    try:
        result = deliverer.deliver(n)
    finally:
        deliverer.close()
    assert recorder.recent[-1] == result
    return result, sleeps, failed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_webhook_sends_alertmanager_v4_exactly(http_peer):
    peer = http_peer()
    firing = make_alert(labels={"plane": "a"}, evidence={"fcs_rate": 2.5e-6},
                        ports=("leaf1:Ethernet3", "spine1:Ethernet1"))
    spec = {"type": "webhook", "name": "hook", "url": peer.url + "/alerts",
            "bearer_token": "s3cret", "external_url": "http://rocewatch:8080"}
    result, _, _ = deliver([spec], notification("hook", [firing]))
    assert result.outcome == "done" and result.action == "notify"
    [req] = peer.requests
    assert req.method == "POST" and req.path == "/alerts"
    assert req.headers["authorization"] == "Bearer s3cret"
    body = req.body
    assert set(body) == {"version", "groupKey", "truncatedAlerts", "status", "receiver",
                         "groupLabels", "commonLabels", "commonAnnotations", "externalURL",
                         "notification_reason", "routeLabels", "alerts"}
    assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "hook"
    assert body["groupKey"] == '{}:{alertname="faulty_link"}'
    assert body["truncatedAlerts"] == 0 and body["externalURL"] == "http://rocewatch:8080"
    assert body["commonLabels"] == {"alertname": "faulty_link", "entity": "leaf1~spine1",
                                    "plane": "a"}
    [a] = body["alerts"]
    assert set(a) == {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL",
                      "fingerprint"}
    assert a["labels"] == body["commonLabels"]
    assert a["fingerprint"] == fingerprint(a["labels"]) == firing.fingerprint
    assert a["startsAt"] == "2027-01-15T08:00:00Z" and a["endsAt"] == "0001-01-01T00:00:00Z"
    assert a["annotations"]["severity"] == "critical"
    assert a["annotations"]["ports"] == "leaf1:Ethernet3,spine1:Ethernet1"
    assert a["annotations"]["runbook"] == "remediation/runbooks/faulty_link.md"


def test_webhook_resolved_and_truncated(http_peer):
    peer = http_peer()
    alerts = [make_alert(entity=f"leaf{i}~spine1", end=30.5) for i in range(1, 4)]
    spec = {"type": "webhook", "name": "hook", "url": peer.url, "max_alerts": 2}
    deliver([spec], notification("hook", alerts, reason="resolved"))
    body = peer.requests[0].body
    assert body["status"] == "resolved" and body["notification_reason"] == "resolved"
    assert body["truncatedAlerts"] == 1 and len(body["alerts"]) == 2
    assert body["alerts"][0]["endsAt"] == "2027-01-15T08:00:30.5Z"
    assert body["alerts"][0]["status"] == "resolved"


def test_retries_5xx_with_growing_backoff_then_succeeds(http_peer):
    peer = http_peer(script=[503, 500])
    spec = {"type": "webhook", "name": "hook", "url": peer.url, "backoff": "1s"}
    result, sleeps, failed = deliver([spec], notification("hook", [make_alert()]))
    assert len(peer.requests) == 3 and result.outcome == "done" and not failed
    assert [s["outcome"] for s in result.steps] == ["failed", "failed", "done"]
    assert [s["status"] for s in result.steps[:2]] == [503, 500]
    # the receiver's own policy, drawn from the deliverer's seeded random source
    policy, rng = RetryPolicy(initial_s=1.0, cap_s=30.0), random.Random(1)
    assert sleeps == [policy.delay(1, rng), policy.delay(2, rng)]
    assert 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0


def test_4xx_is_not_retried_and_the_group_is_forgotten(http_peer):
    peer = http_peer(script=[400])
    spec = {"type": "webhook", "name": "hook", "url": peer.url}
    n = notification("hook", [make_alert()])
    result, sleeps, failed = deliver([spec], n)
    assert len(peer.requests) == 1 and result.outcome == "failed" and sleeps == []
    assert failed == [n] and "400 (not retried)" in result.detail


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(http_peer, status):
    peer = http_peer(script=[status], headers={"Retry-After": "3"})
    spec = {"type": "webhook", "name": "hook", "url": peer.url, "backoff": "100ms"}
    result, sleeps, _ = deliver([spec], notification("hook", [make_alert()]))
    assert result.outcome == "done" and sleeps == [3.0]


def test_retry_after_is_capped_by_max_backoff(http_peer):
    peer = http_peer(script=[429], headers={"Retry-After": "3600"})
    spec = {"type": "webhook", "name": "hook", "url": peer.url, "max_backoff": "20s"}
    result, sleeps, _ = deliver([spec], notification("hook", [make_alert()]))
    assert result.outcome == "done" and sleeps == [20.0]


def test_network_failure_is_retried_until_attempts_run_out():
    spec = {"type": "webhook", "name": "hook", "url": f"http://127.0.0.1:{free_port()}/x",
            "attempts": 3, "timeout": "2s"}
    result, sleeps, failed = deliver([spec], notification("hook", [make_alert()]))
    assert result.outcome == "failed" and len(result.steps) == 3 and len(sleeps) == 2
    assert failed and "ConnectError" in result.detail


def test_alertmanager_api_v2_resends_before_ends_at(http_peer):
    peer = http_peer()
    firing, resolved = make_alert(), make_alert(entity="leaf2~spine1", end=40)
    spec = {"type": "alertmanager", "name": "am", "url": peer.url + "/", "resend": "1m",
            "ends_after": "5m"}
    receivers = build_receivers([PluginSpec.model_validate(spec)])
    assert receivers["am"].caps.max_repeat_s == 60
    deliver([spec], notification("am", [firing, resolved], when=60))
    [req] = peer.requests
    assert req.path == "/api/v2/alerts" and isinstance(req.body, list)
    by_entity = {a["labels"]["entity"]: a for a in req.body}
    assert set(by_entity["leaf1~spine1"]) == {"labels", "annotations", "startsAt", "endsAt",
                                              "generatorURL"}
    assert by_entity["leaf1~spine1"]["labels"]["alertname"] == "faulty_link"
    assert by_entity["leaf1~spine1"]["endsAt"] == "2027-01-15T08:06:00Z"  # 60 s + 5 min
    assert by_entity["leaf2~spine1"]["endsAt"] == "2027-01-15T08:00:40Z"
    with pytest.raises(ConfigError, match="resend must be shorter"):
        build_receivers([PluginSpec.model_validate({**spec, "resend": "10m"})])


def test_pagerduty_trigger_and_resolve_share_a_deterministic_dedup_key(http_peer):
    peer = http_peer(default=202, reply={"status": "success", "message": "Event processed"})
    spec = {"type": "pagerduty", "name": "pd", "url": peer.url + "/v2/enqueue",
            "routing_key": "R" * 32}
    firing = make_alert(severity="warning")
    result, _, _ = deliver([spec], notification("pd", [firing]))
    deliver([spec], notification("pd", [make_alert(end=90)], when=120, reason="resolved"))
    trigger, resolve = (r.body for r in peer.requests)
    assert trigger["event_action"] == "trigger" and resolve["event_action"] == "resolve"
    assert trigger["dedup_key"] == resolve["dedup_key"]
    assert trigger["dedup_key"] == notification("pd", [firing]).group_id  # same on restart
    assert set(resolve) == {"routing_key", "event_action", "dedup_key"}
    payload = trigger["payload"]
    assert payload["severity"] == "warning" and payload["source"] == "lab"
    assert payload["summary"] == '[FIRING:1] faulty_link'
    assert payload["custom_details"]["firing"][0]["fingerprint"] == firing.fingerprint
    assert "202 success" in result.detail
    with pytest.raises(ConfigError, match=r"receivers\[0\].routing_key"):
        build_receivers([PluginSpec.model_validate({**spec, "routing_key": ""})])


def test_slack_incoming_webhook(http_peer):
    peer = http_peer()
    spec = {"type": "slack", "name": "chat", "url": peer.url + "/services/T0/B0/XYZ",
            "channel": "#fabric"}
    result, _, _ = deliver([spec], notification("chat", [make_alert()]))
    body = peer.requests[0].body
    assert body["text"] == "[FIRING:1] faulty_link" and body["channel"] == "#fabric"
    assert body["blocks"][0]["type"] == "header"
    assert "*faulty_link* on `leaf1~spine1`" in body["blocks"][1]["text"]["text"]
    assert "XYZ" not in result.detail  # the secret part of the URL stays out of the audit


class _Inbox:
    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.messages: list[Any] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
            self.messages.append((envelope.mail_from, envelope.rcpt_tos,
                                  message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture
def smtp_server():
    started: list[Controller] = []

    def start(replies: list[str] | None = None) -> tuple[_Inbox, int]:
        inbox = _Inbox(replies or [])
        controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
        controller.start()
        started.append(controller)
        return inbox, controller.port

    yield start
    for c in started:
        c.stop()


def test_smtp_sends_one_mail_and_retries_a_transient_refusal(smtp_server):
    inbox, port = smtp_server(["451 4.3.0 try again later"])
    spec = {"type": "smtp", "name": "mail", "host": "127.0.0.1", "port": port,
            "sender": "rocewatch@fabric.example", "to": ["oncall@fabric.example"]}
    result, sleeps, _ = deliver([spec], notification("mail", [make_alert()]))
    assert result.outcome == "done" and len(sleeps) == 1
    [(sender, rcpts, msg)] = inbox.messages
    assert sender == "rocewatch@fabric.example" and rcpts == ["oncall@fabric.example"]
    assert msg["Subject"] == "[FIRING:1] faulty_link"
    body = msg.get_payload()
    assert "FIRING faulty_link on leaf1~spine1" in body and make_alert().fingerprint in body


def test_smtp_permanent_refusal_is_not_retried(smtp_server):
    _, port = smtp_server(["554 5.7.1 rejected"])
    spec = {"type": "smtp", "name": "mail", "host": "127.0.0.1", "port": port,
            "sender": "rocewatch@fabric.example", "to": ["oncall@fabric.example"]}
    result, sleeps, _ = deliver([spec], notification("mail", [make_alert()]))
    assert result.outcome == "failed" and sleeps == [] and "554" in result.detail


def test_wrong_receiver_config_names_the_key():
    with pytest.raises(PluginError, match=r"no rocewatch\.actions plugin named 'pager'"):
        build_receivers([PluginSpec(type="pager")])
    with pytest.raises(ConfigError, match=r"remediation.receivers\[1\].url"):
        build_receivers([PluginSpec(type="log"), PluginSpec(type="webhook", name="w")])
    with pytest.raises(ConfigError, match=r"remediation.receivers\[0\].colour: unknown key"):
        build_receivers([PluginSpec.model_validate({"type": "log", "colour": "red"})])
    with pytest.raises(ConfigError, match=r"remediation.receivers\[0\].*max_backoff"):
        build_receivers([PluginSpec.model_validate({"type": "log", "backoff": "1m",
                                                    "max_backoff": "10s"})])


def test_a_resolve_never_overtakes_its_trigger_while_that_is_retried(http_peer):
    peer = http_peer(script=[503, 503])
    spec = {"type": "webhook", "name": "hook", "url": peer.url, "backoff": "200ms"}
    receivers = build_receivers([PluginSpec.model_validate(spec)])
    deliverer = Deliverer(receivers, Recorder(None, "actions"), workers=4)
    try:
        deliverer.submit(notification("hook", [make_alert()]))
        deliverer.submit(notification("hook", [make_alert(end=70)], when=80,
                                      reason="resolved"))
        deliverer.drain(10)
    finally:
        deliverer.close()
    assert [r.body["status"] for r in peer.requests] == ["firing"] * 3 + ["resolved"]


def test_every_receiver_speaks_its_peers_clock(http_peer):
    """The fabric's clock 29 s ahead of the receivers' (a compressed run): every time they are
    sent is on their own clock, and a resolve never ends in their future."""
    from remediation.receivers.pagerduty import event
    from remediation.receivers.smtp import email
    from remediation.receivers.webhook import payload

    firing = make_alert(start=10)
    resolved = make_alert(entity="leaf2~spine1", start=20, end=55)
    n = Notification("hook", "g", {"alertname": "faulty_link"}, (firing, resolved), at(60),
                     "new_alerts", wall_offset_ns=-29 * 10**9)
    body = payload(n)
    by_entity = {a["labels"]["entity"]: a for a in body["alerts"]}
    assert by_entity["leaf1~spine1"]["startsAt"] == "2027-01-15T07:59:41Z"  # at(10) - 29 s
    assert by_entity["leaf1~spine1"]["endsAt"] == "0001-01-01T00:00:00Z"
    assert by_entity["leaf2~spine1"]["endsAt"] == "2027-01-15T08:00:26Z"  # at(55) - 29 s
    pd = event(n, "R" * 32, "lab", "fabric")
    assert pd["payload"]["timestamp"] == "2027-01-15T07:59:41Z"
    mail = email(n, "rw@lab", ("oncall@lab",))
    assert mail["Date"].startswith("Fri, 15 Jan 2027 08:00:31")  # at(60) - 29 s
    assert "starts: 2027-01-15T07:59:41Z" in mail.get_content()
