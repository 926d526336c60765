"""Maintenance (issue 10.2): a link the platform drains, one a person drains with a command, and
one the TE controller reports drained are in maintenance; what the maintenance causes is
expected (restated, muted, never a runbook's incident), what caused it stays what it was."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipeline.maintenance import MaintenanceBook, decode, from_steps, record, restate
from pipeline.model import Severity
from pipeline.topology.model import spine_leaf
from pipeline.wire.actions import decode_actions, encode_actions
from pipeline.wire.commands import Drain, Repair
from remediation.alerting.dispatch import Dispatcher, ReceiverCaps
from remediation.alerting.inhibition import Inhibitor
from remediation.alerting.routing import build_routes
from remediation.alerting.silences import Silences
from remediation.drains.runs import Phase
from remediation.maintenance import MaintenanceDesk
from remediation.settings import RouteSettings
from tests.remediation.rig import Rig
from tests.remediation.support import at, make_alert

LINK = "leaf2~spine1"
TOPO = spine_leaf(4, 4, 2)


def held(desk: MaintenanceDesk, target: str = LINK) -> Any:
    m = desk.book.get(target)
    assert m is not None, desk.book.open()
    return m


def drain_by_hand(r: Rig, t: float = 0, by: str = "alice") -> Any:
    result = r.drainer.on_command(Drain(target=LINK, by=by, comment="optics swap"), at(t))
    link = r.topology.link_by_id[LINK]
    for i, gbps in enumerate([300.0, 0.0, 0.0, 0.0]):
        r.traffic(t + 1 + i, link.ends(), gbps)
        r.tick(t + 1 + i)
    return result


# -- the rule ---------------------------------------------------------------------------------

def test_the_rule_explains_what_the_maintenance_caused_and_nothing_else():
    desk = MaintenanceDesk(lambda r: None)
    book = desk.book
    cause = make_alert("faulty_link", LINK, start=0)
    base = held_link(since=10)
    book.apply(base)
    down = make_alert("link_down", LINK, start=12, root_cause=True)
    port = make_alert("port_down", "leaf2:Ethernet3", start=12, root_cause=False,
                      ports=("leaf2:Ethernet3",))
    other = make_alert("link_down", "leaf3~spine1", start=12)
    device = make_alert("uplink_imbalance", "leaf2", start=12,
                        ports=("leaf2:Ethernet3", "leaf2:Ethernet4"))
    assert book.explaining(down) == base and book.explaining(port) == base
    assert book.explaining(cause) is None  # the reason for the drain stays a root cause
    assert book.explaining(other) is None
    # the drained link's flows move onto its siblings: either end's ECMP imbalance that began
    # during the drain is its consequence, another switch's or one from before is not
    assert book.explaining(device) == base
    assert book.explaining(make_alert("ecmp_imbalance", "spine1", start=13)) == base
    assert book.explaining(make_alert("ecmp_imbalance", "leaf3", start=13)) is None
    assert book.explaining(make_alert("ecmp_imbalance", "leaf2", start=5)) is None
    assert book.explaining(make_alert("pfc_storm", "leaf2", start=13)) is None
    restated = book.restate([down, cause, other])
    assert [a.root_cause for a in restated] == [False, True, True]
    assert restated[0].severity == Severity.INFO and restated[0].fingerprint == down.fingerprint
    assert "maintenance by run r1 (faulty_link) since" in restated[0].annotations["maintenance"]
    # on trial after a repair: findings are real again, notifications still muted
    book.apply(replace(base, state="soaking", at_ns=at(50)))
    late = make_alert("faulty_link", LINK, start=55)
    assert book.explaining(late) is None and book.muting(late) is not None
    assert book.muting(cause) is None  # its resolve reaches on-call
    book.apply(replace(base, state="ended", at_ns=at(90)))
    assert book.explaining(down) is None and book.muting(late) is None and not book.open()


def held_link(since: float, **kw: Any) -> Any:
    from pipeline.maintenance import Maintenance

    fields: dict[str, Any] = {
        "target": LINK, "kind": "link", "ports": ("leaf2:Ethernet3", "spine1:Ethernet2"),
        "state": "held", "origin": "runbook", "by": "faulty_link", "run": "r1",
        "since_ns": at(since), "held_since_ns": at(since), "phase": "te_pre", "reason": "x",
        "at_ns": at(since), **kw}
    return Maintenance(**fields)


def test_records_fold_newest_first_and_cross_the_actions_wire():
    m = held_link(since=10)
    wire = decode_actions(encode_actions([record(m), record(replace(m, state="ended",
                                                                    at_ns=at(20)))])).items
    assert [decode(r) for r in wire] == [m, replace(m, state="ended", at_ns=at(20))]
    assert wire[0].outcome == "pending" and wire[1].outcome == "done"
    assert from_steps(json_text(wire[0].steps)) == m  # as the store keeps them
    book = MaintenanceBook()
    assert book.apply_results(wire[::-1]) == 0  # the end first, then a stale start: nothing
    assert not book.open()
    book = MaintenanceBook()
    assert book.apply_results(wire) == 2 and not book.open()
    book = MaintenanceBook()
    book.apply(replace(m, at_ns=at(15)))
    assert not book.apply(m)  # an older record delivered late
    bad = wire[0].model_copy(update={"steps": ({"maintenance": {"target": LINK}},)})
    assert book.apply_results([bad]) == 0 and book.bad == 1


def json_text(steps: Any) -> str:
    import json

    return json.dumps(list(steps))


def test_restate_keeps_identity_and_explains_nothing():
    incident = make_alert("link_down", LINK, start=12, explains=("abc",))
    out = restate(incident, held_link(since=10))
    assert out.fingerprint == incident.fingerprint and out.explains == ()
    assert not out.root_cause and out.starts_ns == incident.starts_ns


# -- remediation's runs -------------------------------------------------------------------------

def test_a_runbook_drain_is_held_until_restored_and_its_consequences_propose_nothing(rig):
    r, _ = rig()
    r.alerts(make_alert(entity=LINK, start=0), t=0)
    link = r.topology.link_by_id[LINK]
    for t, gbps in ((1, 300.0), (10, 300.0), (11, 0.0), (12, 0.0), (13, 0.0)):
        r.traffic(t, link.ends(), gbps)
        r.tick(t)
    run = r.drainer.active[LINK]
    assert run.phase == Phase.DRAINED
    m = held(r.drainer.maintenance)
    assert (m.origin, m.run, m.state) == ("runbook", run.id, "held")
    assert m.since_ns == at(10)  # from the moment the TE controller was told
    # the drained link goes down: not an incident of ours, not a reason to stop automation
    caused = [make_alert(name, LINK, start=14 + i) for i, name in
              enumerate(("link_down", "link_flap", "link_down", "link_flap", "link_down"))]
    for i, alert in enumerate(caused):
        r.alerts(alert, t=14 + i)
    assert not {a.fingerprint for a in caused} & r.drainer.incidents.keys()
    assert r.drainer.halted is None and len(r.drainer.runs) == 1


def test_an_operator_drain_runs_the_runbook_as_approved(rig):
    r, te = rig(mode="approval")  # a person's command is the approval
    result = drain_by_hand(r)
    assert result.outcome == "done", result.detail
    run = r.drainer.active[LINK]
    assert run.phase == Phase.DRAINED and te.drained == {LINK}
    assert r.targets.fabric.sets  # the ports were disabled over gNMI
    guards = {s["guard"]: s["detail"] for s in run.steps if s["step"] == "guard"}
    assert guards["incident"] == "requested by alice" and "capacity_leaf" in guards
    m = held(r.drainer.maintenance)
    assert (m.origin, m.by, m.run) == ("operator", "alice", run.id)
    assert "optics swap" in m.reason
    drain = r.records("drain")[-1]
    assert drain.alert_name == "drain_request" and drain.outcome == "done"
    # the same link again: refused, it is held already
    again = r.drainer.on_command(Drain(target=LINK, by="bob"), at(20))
    assert again.outcome == "refused" and "already on" in again.detail
    # a repair brings it back like any drain
    assert r.drainer.on_command(Repair(target=LINK, by="tech", action="cleaned"),
                                at(30)).outcome == "done"
    r.tick(30)
    assert held(r.drainer.maintenance).state == "soaking"


def test_operator_drains_that_cannot_run_say_why(rig):
    r, te = rig(mode="dry_run")
    decided = drain_by_hand(r)
    assert decided.outcome == "done" and te.requests == [] and not r.targets.fabric.sets
    assert r.drainer.maintenance.book.get(LINK) is None  # a decision holds nothing
    assert "would drain" in r.records("drain")[-1].detail
    nothing = r.drainer.on_command(Drain(target="leaf9~spine9", by="alice"), at(50))
    assert nothing.outcome == "refused" and "neither a fabric link nor a host" in nothing.detail
    r2, _ = rig(guards={"leaf_capacity_floor": 0.9})
    refused = r2.drainer.on_command(Drain(target=LINK, by="alice"), at(0))
    assert refused.outcome == "refused" and "run" in refused.detail
    assert "capacity_leaf" in r2.records("drain")[-1].detail
    assert LINK not in r2.drainer.deferred  # a person's refused request is not retried


def test_a_link_the_te_controller_holds_drained_is_in_maintenance():
    out: list[Any] = []
    desk = MaintenanceDesk(out.append)
    drained = {LINK: {"requested_by": "oncall", "reason": "cable swap", "at_ns": at(5)},
               "leaf3~spine2": {"requested_by": "rocewatch-remediation", "at_ns": at(6)},
               "not~a-link": {"requested_by": "x"}}
    desk.on_te_state(drained, TOPO, at(8))
    m = held(desk)
    assert (m.origin, m.by, m.since_ns, m.run) == ("te", "oncall", at(5), "")
    assert desk.te_drained == {LINK} and len(desk.open()) == 1  # ours and unknown ones: no
    desk.on_te_state(drained, TOPO, at(9))
    assert len(out) == 1  # known already: no new record
    assert desk.explaining(make_alert("anomaly", "spine1:Ethernet2", start=7,
                                      ports=("spine1:Ethernet2",))) == m
    desk.on_te_state({}, TOPO, at(30))
    last = decode(out[-1])
    assert not desk.open() and last is not None and last.state == "ended"


def test_te_drained_links_count_against_the_guards(rig):
    def decide(drained_elsewhere: dict[str, Any]) -> Any:
        r, _ = rig(guards={"leaf_capacity_floor": 0.6})
        r.drainer.maintenance.on_te_state(drained_elsewhere, r.topology, at(0))
        r.alerts(make_alert(entity=LINK, start=0), t=0)
        r.tick(10)
        return r.records("drain")[-1]

    # leaf2 keeps 3 of 4 uplinks (75 %) alone, but 2 of 4 (50 %) once the TE controller holds
    # another of them drained: under the 60 % floor
    alone = decide({})
    assert alone.outcome == "pending" and "TE controller told" in alone.detail
    refused = decide({"leaf2~spine2": {"requested_by": "oncall"}})
    assert refused.outcome == "refused"
    assert "capacity_leaf: leaf2 would keep 800 of 1600" in refused.detail


def test_notifications_mute_what_a_maintenance_caused_but_not_its_cause():
    desk = MaintenanceDesk(lambda r: None)
    desk.book.apply(held_link(since=10))
    route = build_routes(RouteSettings(group_wait=0.0), ["hook"])
    d = Dispatcher(route, Inhibitor(), Silences(), {"hook": ReceiverCaps()},
                   maintained=lambda a: desk.muting(a) is not None)
    cause = make_alert("faulty_link", LINK, start=0)
    caused = make_alert("link_down", LINK, start=12)
    d.ingest([cause, caused], at(20))
    sent = d.flush_due(at(20))
    assert [a.name for n in sent for a in n.alerts] == ["faulty_link"]
    assert d.stats.muted_maintenance == 1
    d.ingest([cause.model_copy(update={"ends_ns": at(30), "updated_ns": at(30)})], at(30))
    resolved = d.flush_due(at(330))  # at the group's next interval
    assert [n.status for n in resolved] == ["resolved"]  # the cause's resolve goes out


# -- detection takes maintenance as an input ------------------------------------------------------

def _detect(with_maintenance: bool) -> list[Any]:
    """The detect role's engine over the in-process bus: a cable of leaf1~spine1 pulled at 4 s
    (oper down, admin up); with a maintenance record for the link on the actions topic, or not."""
    from detectors.chain import DetectionChain
    from detectors.loop import Engine
    from detectors.settings import DetectionSettings
    from pipeline.bus.base import Topics
    from pipeline.bus.memory import MemoryBus
    from pipeline.metrics import metric_id
    from pipeline.model import BatchBuilder
    from pipeline.wire.alerts import decode_alerts
    from pipeline.wire.samples import encode_batch

    topo = spine_leaf(2, 2, 1)
    link = topo.link_by_id["leaf1~spine1"]
    bus, topics = MemoryBus(), Topics("d.")
    bus.ensure_topics(topics.all())
    engine = Engine(bus.consumer([topics.samples], "detect"), bus.producer(), topics,
                    DetectionChain(DetectionSettings(), topo),
                    maintenance=bus.consumer([topics.actions], "detect-maintenance"))
    out = bus.producer()
    if with_maintenance:
        held_here = held_link(since=2, target=link.id, ports=tuple(map(str, link.ends())),
                              origin="operator", by="alice")
        out.send(topics.actions, encode_actions([record(held_here)]), key=link.id.encode())
    alerts = bus.consumer([topics.alerts], "read")
    for k in range(12):
        b = BatchBuilder()
        for device in topo.switches:
            for port in topo.ports(device):
                down = port in link.ends() and k >= 4
                for metric, value in (("if_oper_status", 2.0 if down else 1.0),
                                      ("if_admin_status", 1.0), ("if_out_octets", 1e9 * k),
                                      ("if_in_octets", 1e9 * k)):
                    b.add(at(k), device, port.name, metric_id(metric), -1, value)
        out.send(topics.samples, encode_batch(b.build()), key=b"lab")
        engine.step(0.1)
    engine.close()
    return [a for m in alerts.poll(0.2, 1000) for a in decode_alerts(m.value).items]


def test_detection_restates_what_a_maintenance_causes():
    control = {a.name: a for a in _detect(with_maintenance=False)}
    assert control["link_down"].root_cause  # a pulled cable is an incident...
    held_out = _detect(with_maintenance=True)
    downs = [a for a in held_out if a.name in ("link_down", "port_down")]
    assert downs and not [a for a in held_out if a.root_cause]  # ...but not in maintenance
    assert all(a.severity == Severity.INFO and "maintenance by run r1 (alice)" in
               a.annotations["maintenance"] for a in downs)
