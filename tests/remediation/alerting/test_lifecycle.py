"""The Alertmanager lifecycle on event time: group, dedup, repeat, resolve, silence, inhibit."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError
from pipeline.matchers import parse_matcher
from pipeline.model import Severity
from remediation.alerting.dispatch import Dispatcher, ReceiverCaps
from remediation.alerting.inhibition import Inhibitor
from remediation.alerting.routing import build_routes
from remediation.alerting.silences import Silences
from remediation.settings import InhibitRule, RemediationSettings, RouteSettings
from tests.remediation.support import at, make_alert


def dispatcher(route: dict | None = None, rules: tuple = (), receivers=("hook",),
               caps: dict | None = None) -> Dispatcher:
    settings = RouteSettings.model_validate(route or {})
    root = build_routes(settings, list(receivers))
    return Dispatcher(root, Inhibitor([InhibitRule.model_validate(r) for r in rules]),
                      Silences(), caps or {r: ReceiverCaps() for r in receivers})


def test_group_wait_then_one_notification_for_the_group():
    d = dispatcher({"group_by": ["alertname"]})
    d.ingest([make_alert(entity="leaf1~spine1")], at(0))
    d.ingest([make_alert(entity="leaf2~spine1", start=5)], at(5))
    assert d.flush_due(at(29)) == []
    [n] = d.flush_due(at(30))
    assert n.reason == "new_alerts" and n.status == "firing"
    assert {a.entity for a in n.alerts} == {"leaf1~spine1", "leaf2~spine1"}
    assert n.group_key == '{}:{alertname="faulty_link"}'
    assert n.group_labels == {"alertname": "faulty_link"}


def test_duplicates_are_not_renotified_until_repeat_interval():
    d = dispatcher({"group_wait": "10s", "group_interval": "1m", "repeat_interval": "5m"})
    d.ingest([make_alert()], at(0))
    assert len(d.flush_due(at(10))) == 1
    d.ingest([make_alert(updated=40, evidence={"fcs_rate": 1e-5})], at(40))  # same fingerprint
    assert d.flush_due(at(70)) == []
    assert d.flush_due(at(130)) == []
    [n] = d.flush_due(at(310))
    assert n.reason == "repeat"


def test_new_alert_in_a_notified_group_waits_for_group_interval():
    d = dispatcher({"group_by": ["alertname"], "group_wait": "10s", "group_interval": "1m"})
    d.ingest([make_alert(entity="leaf1~spine1")], at(0))
    assert len(d.flush_due(at(10))) == 1
    d.ingest([make_alert(entity="leaf3~spine2", start=20)], at(20))
    assert d.flush_due(at(60)) == []
    [n] = d.flush_due(at(70))
    assert n.reason == "new_alerts" and len(n.alerts) == 2


def test_resolve_is_notified_then_the_group_is_gone():
    d = dispatcher({"group_wait": "10s", "group_interval": "1m"})
    d.ingest([make_alert()], at(0))
    d.flush_due(at(10))
    d.ingest([make_alert(end=30)], at(30))
    [n] = d.flush_due(at(70))
    assert n.status == "resolved" and n.reason == "resolved"
    assert n.alerts[0].ends_ns == at(30)
    assert d.groups == {} and d.alerts == {}


def test_an_alert_resolved_within_group_wait_sends_nothing():
    d = dispatcher({"group_wait": "30s"})
    d.ingest([make_alert()], at(0))
    d.ingest([make_alert(end=10)], at(10))
    assert d.flush_due(at(30)) == []
    assert d.groups == {}


def test_send_resolved_false_skips_the_resolved_notice():
    d = dispatcher({"group_wait": "0s"}, caps={"hook": ReceiverCaps(send_resolved=False)})
    d.ingest([make_alert()], at(0))
    assert len(d.flush_due(at(0))) == 1
    d.ingest([make_alert(end=5)], at(5))
    assert d.flush_due(at(400)) == []


def test_an_old_alert_flushes_at_once():
    d = dispatcher({"group_wait": "30s"})
    d.ingest([make_alert(start=0, updated=100)], at(100))  # started 100 s before we saw it
    assert len(d.flush_due(at(100))) == 1


def test_late_older_state_does_not_overwrite_a_newer_one():
    d = dispatcher({"group_wait": "0s"})
    d.ingest([make_alert(end=50)], at(50))  # unknown and already resolved: nothing to tell
    d.ingest([make_alert(updated=60)], at(60))
    d.ingest([make_alert(end=40)], at(60))  # an older resolve delivered late
    assert d.stats.stale == 1
    assert d.firing(at(60))


def test_silence_mutes_inside_its_window_only():
    d = dispatcher({"group_wait": "0s", "group_interval": "10s"})
    d.silences.add(['entity="leaf1~spine1"', 'alertname=~"faulty_.*"'], at(0), at(60), "alice")
    d.ingest([make_alert()], at(1))
    assert d.flush_due(at(1)) == []
    assert d.flush_due(at(51)) == []
    [n] = d.flush_due(at(61))
    assert n.reason == "new_alerts"


def test_expired_silence_stops_muting():
    d = dispatcher({"group_wait": "0s", "group_interval": "10s"})
    sid = d.silences.add(['entity="leaf1~spine1"'], at(0), at(3600), "bob").id
    d.ingest([make_alert()], at(1))
    assert d.flush_due(at(1)) == []
    d.silences.expire(sid, at(5))
    assert len(d.flush_due(at(11))) == 1


def test_inhibited_by_mutes_a_symptom_while_its_incident_fires():
    d = dispatcher({"group_wait": "0s", "group_interval": "10s"})
    incident = make_alert("pfc_storm", "host5")
    symptom = make_alert("pfc_watchdog", "leaf2~spine1", root_cause=False,
                         inhibited_by=incident.fingerprint, severity=Severity.WARNING)
    d.ingest([incident, symptom], at(0))
    notified = {a.name for n in d.flush_due(at(0)) for a in n.alerts}
    assert notified == {"pfc_storm"}
    d.ingest([make_alert("pfc_storm", "host5", end=5)], at(5))
    later = {a.name for n in d.flush_due(at(20)) for a in n.alerts if a.firing}
    assert later == {"pfc_watchdog"}  # the cause is gone, the symptom is news now


def test_inhibit_rule_with_equal_labels():
    rules = ({"source_matchers": ['alertname="link_down"'],
              "target_matchers": ['alertname="fcs_errors"'], "equal": ["entity"]},)
    d = dispatcher({"group_wait": "0s"}, rules=rules)
    down = make_alert("link_down", "leaf1~spine1")
    muted = make_alert("fcs_errors", "leaf1~spine1", root_cause=False)
    other = make_alert("fcs_errors", "leaf2~spine1", root_cause=False)
    d.ingest([down, muted, other], at(0))
    seen = {(a.name, a.entity) for n in d.flush_due(at(0)) for a in n.alerts}
    assert seen == {("link_down", "leaf1~spine1"), ("fcs_errors", "leaf2~spine1")}


def test_routes_match_in_order_and_continue():
    route = {"receivers": ["log"], "group_wait": "0s", "routes": [
        {"matchers": ['severity="critical"'], "receivers": ["pager"], "continue": True},
        {"matchers": ['alertname=~"faulty_link|link_flap"'], "receivers": ["hook"]},
        {"matchers": ['alertname="faulty_link"'], "receivers": ["never"]},
    ]}
    d = dispatcher(route, receivers=("log", "pager", "hook", "never"))
    d.ingest([make_alert("faulty_link"), make_alert("incast", "host3", severity=Severity.WARNING)],
             at(0))
    got = sorted((n.receiver, n.alerts[0].name) for n in d.flush_due(at(0)))
    assert got == [("hook", "faulty_link"), ("log", "incast"), ("pager", "faulty_link")]


def test_receiver_resend_caps_interval_and_repeat():
    d = dispatcher({"group_wait": "0s", "group_interval": "5m", "repeat_interval": "4h"},
                   receivers=("am",), caps={"am": ReceiverCaps(max_repeat_s=60)})
    d.ingest([make_alert()], at(0))
    assert len(d.flush_due(at(0))) == 1
    assert d.flush_due(at(59)) == []
    [n] = d.flush_due(at(60))
    assert n.reason == "repeat"


def test_matchers_are_anchored_and_parse_errors_are_clear():
    assert parse_matcher('alertname=~"faulty"').matches({"alertname": "faulty"})
    assert not parse_matcher('alertname=~"faulty"').matches({"alertname": "faulty_link"})
    assert parse_matcher('entity!~"leaf1.*"').matches({"entity": "leaf2~spine1"})
    assert parse_matcher("team=").matches({})  # absent label is ""
    with pytest.raises(ConfigError, match="not a matcher"):
        parse_matcher("alertname is faulty")
    with pytest.raises(ConfigError, match="bad regular expression"):
        parse_matcher('x=~"("')


def test_settings_name_the_wrong_key():
    with pytest.raises(Exception, match="no receiver named 'pager'"):
        RemediationSettings.model_validate({"route": {"routes": [{"receivers": ["pager"]}]}})
    with pytest.raises(Exception, match="want a duration like 90s, 1h30m"):
        RemediationSettings.model_validate({"route": {"group_wait": "thirty"}})
    with pytest.raises(Exception, match="not a matcher"):
        RemediationSettings.model_validate({"inhibit_rules": [
            {"source_matchers": ["oops"], "target_matchers": []}]})
    ok = RemediationSettings.model_validate({"route": {"group_wait": "1m30s",
                                                       "repeat_interval": "4h"}})
    assert ok.route.group_wait == 90 and ok.route.repeat_interval == 14400
