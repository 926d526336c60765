"""The run report's alert entries and the score: matching rules, time to detect, supersession."""

from __future__ import annotations

import pytest

from lab.scenario.load import parse_scenario
from lab.scenario.spec import Scenario
from pipeline.model import Alert
from rocewatch.scenario.machine import QUIET_IDLE
from rocewatch.scenario.runner import (
    SNMP_RUN_BUDGET,
    SNMP_VARBINDS_PER_PORT,
    alert_entries,
    harness_speed,
)
from rocewatch.scenario.scoring import SuiteTotals, score

S = 1_000_000_000


def report(truth: list, alerts: list, interval: float = 1.0) -> dict:
    return {"format": 1, "scenario": "t", "sample_interval_s": interval,
            "topology": {"links": [], "hosts": []}, "truth": truth, "alerts": alerts,
            "actions": []}


def entry(kind: str, entity: str, first: float, root: bool = True, ports=()) -> dict:
    return {"kind": kind, "entity": entity, "ports": list(ports), "first_s": first,
            "last_s": first + 10, "severity": "critical", "root_cause": root}


def truth(kind: str, target: str, start: float, end: float) -> dict:
    return {"kind": kind, "target": target, "start_s": start, "end_s": end}


def test_kind_entity_and_time_must_all_match():
    r = report([truth("link_corruption", "leaf3~spine2", 50, 100)], [
        entry("faulty_link", "leaf3~spine2", 52),   # right
        entry("faulty_link", "leaf3~spine1", 52),   # wrong link
        entry("link_down", "leaf3~spine2", 53),     # wrong kind
        entry("faulty_link", "leaf3~spine2", 20),   # before the fault: not a detection
    ])
    s = score(r)
    assert s.recall == 1.0 and s.precision == 0.25 and s.ttd_s == {"link_corruption": 2.0}
    assert s.entity_hits == (1, 1)


def test_a_port_of_the_alert_can_name_the_target_and_deadlocks_match_any_cycle_link():
    r = report([truth("pfc_storm", "host5", 10, 20), truth("pfc_deadlock", "leaf2~spine1", 10,
                                                           20)],
               [entry("pfc_storm", "leaf2:Ethernet1", 12, ports=["host5"]),
                entry("pfc_deadlock", "leaf1~spine1,leaf2~spine1", 13)])
    assert score(r).recall == 1.0


def test_symptoms_never_count_and_a_control_with_an_incident_has_zero_precision():
    quiet = report([], [entry("pfc_paused", "spine1:Ethernet2", 5, root=False)])
    assert score(quiet).precision == 1.0
    noisy = report([], [entry("incast", "host1", 5)])
    assert score(noisy).precision == 0.0
    totals = SuiteTotals()
    totals.add(noisy, score(noisy))
    assert totals.control_false_positives == 1


def test_a_flap_counts_from_the_link_down_it_superseded():
    r = report([truth("link_flap", "leaf7~spine1", 90, 150)], [
        entry("link_down", "leaf7~spine1", 92, root=False),
        entry("link_flap", "leaf7~spine1", 93.1)])
    assert score(r).ttd_s == {"link_flap": 2.0}


def test_report_entries_keep_the_first_raise_the_last_verdict_and_only_detection_alerts():
    base = {"entity": "leaf7~spine1", "ports": ("leaf7:Ethernet5",)}
    states = [
        Alert(name="link_down", starts_ns=91 * S, updated_ns=92 * S, source="correlator",
              severity="critical", **base),
        Alert(name="link_down", starts_ns=91 * S, updated_ns=93 * S, source="correlator",
              root_cause=False, inhibited_by="f", **base),
        Alert(name="link_down", starts_ns=91 * S, updated_ns=94 * S, ends_ns=94 * S,
              source="correlator", root_cause=False, **base),
        Alert(name="remediation_halted", entity="remediation", starts_ns=95 * S,
              updated_ns=95 * S, source="remediation"),
    ]
    entries = alert_entries(states, epoch_ns=0, end_s=200.0)
    assert entries == [{"kind": "link_down", "entity": "leaf7~spine1",
                        "ports": ["leaf7:Ethernet5"], "first_s": 92.0, "last_s": 94.0,
                        "severity": "critical", "root_cause": False}]


def test_a_finding_raised_again_later_is_a_new_entry_with_its_own_time():
    # a link that went down during a flap and, a minute later, for good: two pages, and the
    # second fault is detected when the second one was raised, not when the first was
    base = {"name": "link_down", "entity": "leaf3~spine2", "source": "correlator"}
    states = [
        Alert(starts_ns=31 * S, updated_ns=32 * S, **base),
        Alert(starts_ns=31 * S, updated_ns=34 * S, root_cause=False, **base),
        Alert(starts_ns=31 * S, updated_ns=35 * S, ends_ns=35 * S, root_cause=False, **base),
        Alert(starts_ns=101 * S, updated_ns=102 * S, **base),
    ]
    entries = alert_entries(states, epoch_ns=0, end_s=160.0)
    assert [(e["first_s"], e["last_s"], e["root_cause"]) for e in entries] == [
        (102.0, 160.0, True), (32.0, 35.0, False)]
    s = score(report([truth("link_down", "leaf3~spine2", 100.3, 160)], entries))
    assert s.recall == 1.0 and s.precision == 1.0
    assert s.ttd_s == {"link_down": pytest.approx(1.7)}


def test_an_episode_raised_after_the_runs_end_is_not_the_runs():
    # detection catching up after the scenario's end sees the lab run on and stop: a no_data
    # raised then says nothing of the scenario; one raised before the end and still open stays
    base = {"name": "no_data", "entity": "spine1", "source": "no_data", "root_cause": False}
    states = [
        Alert(starts_ns=100 * S, updated_ns=100 * S, **{**base, "entity": "spine2"}),
        Alert(starts_ns=120 * S + 1, updated_ns=121 * S, **base),
        Alert(starts_ns=119 * S, updated_ns=120 * S, **{**base, "entity": "leaf1"}),
    ]
    entries = alert_entries(states, epoch_ns=0, end_s=120.0)
    assert [(e["entity"], e["first_s"], e["last_s"]) for e in entries] == [
        ("spine2", 100.0, 120.0), ("leaf1", 120.0, 120.0)]


def test_action_entries_name_what_was_acted_on():
    from pipeline.model import ActionResult
    from rocewatch.scenario.runner import action_entries

    incident = Alert(name="faulty_link", entity="leaf3~spine2", starts_ns=50 * S,
                     updated_ns=51 * S, source="correlator")
    actions = [
        ActionResult(action="drain", target="leaf3~spine2", alert_fingerprint=incident.fingerprint,
                     mode="dry_run", outcome="done", at_ns=60 * S),
        ActionResult(action="notify", target="oncall-webhook", mode="auto", outcome="done",
                     alert_fingerprint=incident.fingerprint, at_ns=52 * S),
    ]
    assert action_entries(actions, epoch_ns=0, alerts=[incident]) == [
        {"action": "notify", "entity": "leaf3~spine2", "at_s": 52.0, "mode": "auto",
         "outcome": "done"},
        {"action": "drain", "entity": "leaf3~spine2", "at_s": 60.0, "mode": "dry_run",
         "outcome": "done"},
    ]


def test_a_deadlock_given_as_its_whole_cycle_matches_in_any_order():
    cycle = "leaf1~spine1,leaf2~spine1,leaf2~spine2,leaf1~spine2"
    found = "leaf2~spine2,leaf1~spine2,leaf1~spine1,leaf2~spine1"
    assert score(report([truth("pfc_deadlock", cycle, 10, 20)],
                        [entry("pfc_deadlock", found, 12)])).recall == 1.0
    assert score(report([truth("pfc_deadlock", cycle, 10, 20)],
                        [entry("pfc_deadlock", "leaf3~spine1,leaf3~spine2", 12)])).recall == 0.0


def _fabric(snmp: float, interval: float) -> Scenario:
    return parse_scenario({
        "format": 1, "name": "speed", "seed": 1, "duration_s": 60, "sample_interval_s": interval,
        "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 4, "agents": {"gnmi": 1 - snmp,
                                                                             "snmp": snmp}},
        "traffic": [{"pattern": "alltoall", "hosts": "all", "load": 0.3}], "faults": []})


def test_a_run_slows_its_clock_so_snmp_polls_keep_the_cadence() -> None:
    # 6 SNMP switches of 8 + 4 ports: 32 x 70 varbinds a poll
    per_poll = 32 * SNMP_VARBINDS_PER_PORT
    assert harness_speed(_fabric(0.0, 1.0), 10.0) == 10.0
    assert harness_speed(_fabric(1.0, 1.0), 10.0) == pytest.approx(SNMP_RUN_BUDGET / per_poll)
    # twice the interval, twice the speed; never faster than asked
    assert harness_speed(_fabric(1.0, 2.0), 10.0) == pytest.approx(2 * SNMP_RUN_BUDGET / per_poll)
    assert harness_speed(_fabric(1.0, 60.0), 10.0) == 10.0
    # half the switches on SNMP, half the load
    assert harness_speed(_fabric(0.5, 1.0), 10.0) > harness_speed(_fabric(1.0, 1.0), 10.0)


def test_the_runner_slows_gnmi_and_snmp_runs_on_a_busy_machine() -> None:
    half = QUIET_IDLE / 2
    assert harness_speed(_fabric(0.0, 1.0), 4.0, idle=1.0) == 4.0
    assert harness_speed(_fabric(0.0, 1.0), 4.0, idle=half) == pytest.approx(2.0)
    snmp_speed = SNMP_RUN_BUDGET / (32 * SNMP_VARBINDS_PER_PORT)
    assert harness_speed(_fabric(1.0, 1.0), 10.0, idle=1.0) == pytest.approx(snmp_speed)
    assert harness_speed(_fabric(1.0, 1.0), 10.0, idle=half) == pytest.approx(snmp_speed / 2)
