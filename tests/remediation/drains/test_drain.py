"""The drain state machine end to end against real loopback peers: a gNMI target per switch and
an HTTP TE endpoint; dry-run records a decision and touches nothing."""

from __future__ import annotations

from pipeline.topology.model import Port
from pipeline.wire.commands import Approve, Reject, Repair, Resume
from remediation.drains.runs import Phase
from tests.remediation.rig import Rig, settings
from tests.remediation.support import at, make_alert

LINK = "leaf2~spine1"


def run_drain(r: Rig, start: float = 0) -> tuple[Port, Port]:
    """Fire the incident, let it confirm, feed traffic until it has left, and tick."""
    link = r.topology.link_by_id[LINK]
    ends = link.ends()
    r.alerts(make_alert(entity=LINK, start=start, updated=start), t=start)
    r.traffic(start + 1, ends, 300.0)
    r.tick(start + 5)
    r.tick(start + 10)  # confirmed: guards pass, TE told, waiting for traffic to leave
    for i, gbps in enumerate([250.0, 0.0, 0.0, 0.0]):
        r.traffic(start + 11 + i, ends, gbps)
        r.tick(start + 11 + i)
    return ends


def test_auto_drain_then_repair_and_soak_restore(rig):
    r, te = rig()
    a, b = run_drain(r)
    run = r.drainer.runs[next(iter(r.drainer.runs))]
    assert run.phase == Phase.DRAINED
    assert te.calls() == [("POST", f"/v1/links/{LINK}/drain"), ("GET", f"/v1/links/{LINK}")]
    body = te.requests[0][2]
    assert body["evidence"]["alert"] == "faulty_link"
    assert body["requested_by"] == "rocewatch-remediation" and te.drained == {LINK}
    fabric_state = r.targets.fabric
    assert sorted(fabric_state.sets) == sorted([(a, False), (b, False)])
    assert not fabric_state.oper_up(a) and not fabric_state.oper_up(b)
    assert r.phases() == ["confirming", "te_pre", "verify_traffic", "disable", "verify_down",
                          "te_post", "drained"]
    last = r.records("drain")[-1]
    assert last.outcome == "done" and last.mode == "auto" and last.target == LINK
    assert [s["step"] for s in last.steps if s["step"] == "guard"] and \
        {s["guard"] for s in last.steps if s["step"] == "guard"} >= {
            "connectivity", "capacity_leaf", "capacity_spine", "blast_radius", "rate_limit"}
    # the drained link is in maintenance: what the drain causes pages nobody, the incident that
    # asked for it stays what it was
    held = r.drainer.maintenance.book.get(LINK)
    assert held is not None and held.state == "held" and held.run == run.id
    assert held.origin == "runbook" and held.by == "faulty_link"
    caused = make_alert("link_down", LINK, start=20)
    assert r.drainer.maintenance.explaining(caused) is held
    assert r.drainer.maintenance.muting(caused) is held
    assert r.drainer.maintenance.explaining(run.alert) is None
    # repair, then a clean soak on event time, then TE restore
    result = r.drainer.on_command(Repair(target=LINK, by="tech", action="replaced optic"),
                                  at(100))
    assert result.outcome == "done"
    r.tick(100)
    assert run.phase == Phase.SOAK and fabric_state.oper_up(a)
    for t in range(101, 162, 10):
        r.traffic(t, (a, b), 100.0, dt=10)
        r.tick(t)
    assert run.phase == Phase.RESTORED
    assert te.calls()[-1] == ("POST", f"/v1/links/{LINK}/undrain") and te.drained == set()
    undrain = r.records("undrain")[-1]
    assert undrain.outcome == "done" and "back in service" in undrain.detail
    assert any(s["step"] == "repair" for s in undrain.steps)
    assert r.drainer.maintenance.book.get(LINK) is None
    states = [m.steps[0]["maintenance"]["state"] for m in r.records("maintenance")]
    # one record per change, and the open maintenance re-announced after a quiet minute
    assert [s for i, s in enumerate(states) if not i or states[i - 1] != s] == \
        ["held", "soaking", "ended"]
    assert states.count("held") == 2
    assert LINK not in r.drainer.active


def test_dry_run_records_a_decision_and_touches_nothing(rig):
    r, te = rig(mode="dry_run")
    run_drain(r)
    assert te.requests == [] and r.targets.fabric.sets == []
    [proposed, decided] = r.records("drain")
    assert proposed.outcome == "pending" and decided.outcome == "done"
    assert decided.mode == "dry_run" and decided.detail.startswith("[decided] dry-run: would drain")
    assert "nothing touched" in decided.detail and "tell TE (before)" in decided.detail
    assert LINK not in r.drainer.active


def test_approval_waits_for_a_person_then_proceeds(rig):
    r, te = rig(mode="approval")
    run_drain(r)
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.AWAITING_APPROVAL and te.requests == []
    wrong = r.drainer.on_command(Approve(target="leaf3~spine1", by="alice"), at(20))
    assert wrong.outcome == "refused"
    ok = r.drainer.on_command(Approve(target=LINK, by="alice", comment="go"), at(20))
    assert ok.outcome == "done" and run.phase == Phase.TE_PRE
    r.tick(20)
    assert run.phase == Phase.VERIFY_TRAFFIC and len(te.requests) == 1


def test_reject_cancels(rig):
    r, _ = rig(mode="approval")
    run_drain(r)
    r.drainer.on_command(Reject(target=LINK, by="bob", comment="job checkpointing"), at(20))
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.CANCELLED and "rejected by bob" in r.records("drain")[-1].detail


def test_traffic_that_does_not_leave_aborts_and_tells_te(rig):
    r, te = rig()
    link = r.topology.link_by_id[LINK]
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    for t in range(11, 45, 2):
        r.traffic(t, link.ends(), 300.0, dt=2)
        r.tick(t)
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.FAILED and r.targets.fabric.sets == []
    assert [p for _, p in te.calls()] == [f"/v1/links/{LINK}/drain",
                                          f"/v1/links/{LINK}/undrain"]
    assert te.drained == set()
    assert "still flowing" in r.records("drain")[-1].detail


def test_a_switch_refusing_set_rolls_back_the_other_end(rig, targets):
    r, te = rig()
    link = r.topology.link_by_id[LINK]
    targets.fabric.broken.add(link.b)
    run_drain(r)
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.FAILED
    assert targets.fabric.sets == [(link.a, False), (link.a, True)]
    assert targets.fabric.oper_up(link.a)
    detail = r.records("drain")[-1].detail
    assert "UNAVAILABLE" in detail and f"re-enabled {link.a}" in detail
    assert te.calls()[-1] == ("POST", f"/v1/links/{LINK}/undrain")


def test_errors_during_soak_disable_the_link_again(rig):
    r, _ = rig()
    a, b = run_drain(r)
    r.drainer.on_command(Repair(target=LINK, by="tech", action="cleaned connector"), at(100))
    r.tick(100)
    r.traffic(110, (a, b), 100.0, errors=42, dt=10)
    r.tick(110)
    run = next(iter(r.drainer.runs.values()))
    assert run.phase == Phase.DRAINED and not r.targets.fabric.oper_up(a)
    last = r.records("undrain")[-1]
    assert last.outcome == "failed" and "84 error-counter increments" in last.detail


def test_pfc_storm_isolates_the_host_port_never_a_fabric_link(rig, targets):
    r, te = rig(mode="auto")  # the host runbook's own mode is approval: the cautious one wins
    r.alerts(make_alert("pfc_storm", "host3"))
    r.tick(10)
    run = next(iter(r.drainer.runs.values()))
    assert run.runbook == "isolate" and run.phase == Phase.AWAITING_APPROVAL
    r.drainer.on_command(Approve(target="host3", by="alice"), at(12))
    r.tick(12)
    host_port = targets.fabric.topology.host_by_name["host3"].port
    assert targets.fabric.sets == [(host_port, False)] and te.requests == []
    assert run.phase == Phase.DRAINED and r.records("isolate")[-1].outcome == "done"


def test_no_te_controller_refuses_a_real_drain(targets):
    r = Rig(targets.fabric.topology, targets, "", settings())
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    last = r.records("drain")[-1]
    assert last.outcome == "refused" and "te_controller" in last.detail


def test_mass_anomaly_stops_automation_and_pages(rig):
    r, te = rig()
    incidents = [make_alert(entity=e) for e in
                 ("leaf1~spine1", "leaf2~spine2", "leaf3~spine3")] + [
                 make_alert("incast", "host1")]
    r.alerts(*incidents)
    assert r.drainer.halted and "4 root-cause incidents" in r.drainer.halted
    assert [a.name for a in r.paged] == ["remediation_halted"]
    assert {run.phase for run in r.drainer.runs.values()} == {Phase.CANCELLED}
    r.tick(30)
    assert te.requests == [] and r.targets.fabric.sets == []
    assert r.records("halt")[-1].outcome == "done"
    resumed = r.drainer.on_command(Resume(by="alice", comment="telemetry fixed"), at(40))
    assert resumed.outcome == "done" and r.drainer.halted is None
    assert r.paged[-1].ends_ns == at(40)


def test_te_refusing_the_drain_fails_it_with_nothing_touched(rig):
    r, te = rig()
    te.refuse.add(LINK)
    r.alerts(make_alert(entity=LINK))
    r.tick(10)
    last = r.records("drain")[-1]
    assert last.outcome == "failed" and "409" in last.detail and "would isolate leaf2" in \
        last.detail
    assert r.targets.fabric.sets == [] and te.drained == set()


def test_each_telemetry_sample_counts_once_however_often_we_look(rig):
    r, _ = rig()
    ends = r.topology.link_by_id[LINK].ends()
    r.alerts(make_alert(entity=LINK))
    r.traffic(9, ends, 300.0)
    r.tick(10)
    r.traffic(11, ends, 0.0)
    for t in (11.0, 11.25, 11.5, 11.75):  # the heartbeat looks more often than samples come
        r.tick(t)
    run = r.drainer.active[LINK]
    assert run.phase == Phase.VERIFY_TRAFFIC and run.quiet_samples == 1
    r.traffic(12, ends, 0.0)
    r.tick(12)
    assert run.phase == Phase.DRAINED


def test_runs_cancelled_by_a_halt_are_retried_after_resume(rig):
    r, _ = rig(mode="dry_run")
    r.alerts(*(make_alert(entity=e) for e in ("leaf1~spine1", "leaf2~spine2", "leaf3~spine3",
                                              "leaf4~spine4")))
    assert r.drainer.halted and set(r.drainer.deferred) == {
        "leaf1~spine1", "leaf2~spine2", "leaf3~spine3", "leaf4~spine4"}
    r.alerts(*(make_alert(entity=e, end=20) for e in ("leaf2~spine2", "leaf3~spine3",
                                                      "leaf4~spine4")), t=20)
    r.tick(30)
    assert not [x for x in r.records("drain") if x.outcome == "done"]  # still stopped
    r.drainer.on_command(Resume(by="alice"), at(40))
    r.tick(41)
    [decided] = [x for x in r.records("drain") if x.outcome == "done"]
    assert decided.target == "leaf1~spine1" and "attempt 2" in decided.steps[0]["detail"]
