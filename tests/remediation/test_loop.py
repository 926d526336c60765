"""The remediate role over the in-process bus: alerts and commands in, notifications out, every
decision on the actions topic; garbage is refused and loses nothing else; state survives."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.metrics import metric_id
from pipeline.model import ActionResult, BatchBuilder
from pipeline.stage import StageContext
from pipeline.topology.model import spine_leaf
from pipeline.wire.alerts import encode_alerts
from pipeline.wire.commands import Approve, Silence, encode_command
from pipeline.wire.deadletter import decode_dead_letter
from pipeline.wire.samples import encode_batch
from remediation import loop as router
from remediation import state
from remediation.alerting.silences import Silences
from remediation.settings import RemediationSettings
from rocewatch.settings import Settings
from tests.remediation.drains.test_drain import LINK, run_drain
from tests.remediation.gnmi_target import Targets
from tests.remediation.rig import Rig, settings
from tests.remediation.support import at, make_alert
from tests.remediation.te_controller import TeController

TOPO = spine_leaf(4, 4, 2)


def clock_batch(t: float) -> bytes:
    b = BatchBuilder()
    b.add(at(t), "leaf1", "Ethernet1", metric_id("if_oper_status"), -1, 1.0)
    return encode_batch(b.build())


def wait_for(what: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_role_end_to_end_on_the_memory_bus(http_peer, tmp_path):
    hook = http_peer()
    rs = RemediationSettings.model_validate({
        "mode": "dry_run", "state_path": str(tmp_path / "state.json"),
        "receivers": [{"type": "log", "name": "log"},
                      {"type": "webhook", "name": "hook", "url": hook.url}],
        "route": {"group_wait": "0s", "group_interval": "10s"},
        "clock": {"tick": 0.05}, "guards": {"confirm": "5s"}})
    bus, topics = MemoryBus(), Topics("t.")
    bus.ensure_topics(topics.all())
    audit = bus.consumer([topics.actions], "audit")
    dead = bus.consumer([topics.deadletter], "dead")
    ctx = StageContext(Settings(site="test", remediation=rs), bus, topics, TOPO)
    stop = threading.Event()
    loop = threading.Thread(target=router.run, args=(ctx, stop), daemon=True)
    loop.start()
    out = bus.producer()
    good = make_alert(entity=LINK)
    mixed = b"[" + encode_alerts([good])[1:-1] + b', {"name": 5}]'
    out.send(topics.alerts, b"not json at all")
    out.send(topics.alerts, mixed)
    out.send(topics.samples, clock_batch(20))
    out.send(topics.commands, b'{"kind": "approve"}')
    out.send(topics.commands, encode_command(Silence(
        matchers=('entity="leaf9~spine9"',), ends_ns=at(3600), by="alice")))
    out.send(topics.commands, encode_command(Approve(target=LINK, by="bob")))

    records: list[ActionResult] = []

    def actions() -> list[ActionResult]:
        records.extend(ActionResult.model_validate_json(m.value)
                       for m in audit.poll(0.05, 1000))
        return records

    wait_for(lambda: any(r.action == "drain" and r.outcome == "done" for r in actions()))
    wait_for(lambda: hook.requests and any(r.action == "notify" for r in actions()))
    health = ctx.health["remediate"]()
    stop.set()
    loop.join(10)
    assert not loop.is_alive()

    body = hook.requests[0].body
    assert body["version"] == "4" and body["alerts"][0]["fingerprint"] == good.fingerprint
    decided = next(r for r in records if r.action == "drain" and r.outcome == "done")
    assert decided.mode == "dry_run" and "would drain leaf2~spine1" in decided.detail
    assert decided.at_ns == at(20)  # decided on event time, not on the wall clock
    commands = [r for r in records if r.action == "command"]
    assert [c.outcome for c in commands] == ["refused", "done", "refused"]
    assert "bad approve command: by: Field required; target: Field required" in \
        commands[0].detail
    assert "nothing awaits approval" in commands[2].detail  # dry-run never waits for one
    parked = sorted((d.topic, d.offset, d.kept, len(d.items))
                    for d in (decode_dead_letter(m.value) for m in dead.poll(1.0)))
    # the unreadable alert list, the list with one bad alert (one kept), the bad command
    assert parked == [(topics.alerts, 0, 0, 0), (topics.alerts, 0, 1, 1),
                      (topics.commands, 0, 0, 0)]
    assert health["bad_alerts"] == 2 and health["alerts"] == 1 and health["bad_commands"] == 1
    saved = json.loads((tmp_path / "state.json").read_text())
    assert [s["matchers"] for s in saved["silences"]] == [['entity="leaf9~spine9"']]


def test_a_drained_link_survives_a_restart():
    targets, te = Targets(TOPO), TeController(TOPO).start()
    try:
        r = Rig(TOPO, targets, te.url, settings())
        run_drain(r)
        data = json.loads(json.dumps(state.snapshot(r.drainer, Silences())))
    finally:
        targets.stop()
        te.stop()
    again = Rig(TOPO, None, "", settings())
    state.restore(data, again.drainer, Silences())
    assert again.drainer.active[LINK].phase == "drained"
    assert again.drainer.fabric().drained == {LINK}
    # the restored drain still counts: a second link on the same leaf is refused
    again.alerts(make_alert(entity="leaf2~spine3", start=200), t=200)
    again.tick(230)
    last = again.records("drain")[-1]
    assert last.outcome == "refused"
    assert "blast_radius: leaf2 already has 1 drained uplink" in last.detail


def test_a_dry_run_drain_decision_lands_in_the_store(chdb_store):
    from pipeline.ingest.loop import Ingest
    from remediation.service import Remediation

    bus, topics = MemoryBus(), Topics("s.")
    rs = RemediationSettings.model_validate({"mode": "dry_run", "state_path": "",
                                             "guards": {"confirm": "5s"}})
    service = Remediation(rs, bus, topics, TOPO)
    ingest = Ingest(bus, chdb_store, topics)
    try:
        out = bus.producer()
        out.send(topics.alerts, encode_alerts([make_alert(entity=LINK)]))
        out.send(topics.samples, clock_batch(10))
        while service.poll(0.05):
            pass
        service.runbooks_tick()
        while ingest.step():
            pass
    finally:
        service.close()
        ingest.close()
    rows = chdb_store.query(
        f"SELECT action, target, mode, outcome, detail FROM {chdb_store.database}.actions "
        "WHERE action = 'drain' ORDER BY at, id")
    assert list(rows["outcome"]) == ["pending", "done"]
    assert set(rows["mode"]) == {"dry_run"} and set(rows["target"]) == {LINK}
    assert "would drain leaf2~spine1" in rows["detail"][-1]


def notified(notify: str) -> list[str]:
    """Which alerts reach a receiver when a symptom and an incident fire together."""
    from remediation.service import Remediation

    bus, topics = MemoryBus(), Topics("n.")
    rs = RemediationSettings.model_validate({
        "mode": "dry_run", "state_path": "", "notify": notify,
        "receivers": [{"type": "log", "name": "log"}],
        "route": {"group_wait": "0s", "group_by": ["..."]}})
    service = Remediation(rs, bus, topics, TOPO)
    audit = bus.consumer([topics.actions], "audit")
    try:
        symptom = make_alert(name="queue_buildup", entity="leaf1:Ethernet5", root_cause=False,
                             severity="warning")
        incident = make_alert(name="pfc_storm", entity="host3")
        bus.producer().send(topics.alerts, encode_alerts([symptom, incident]))
        bus.producer().send(topics.samples, clock_batch(5))
        while service.poll(0.05):
            pass
        service.alerts_tick()
    finally:
        service.close()
    records = [ActionResult.model_validate_json(m.value) for m in audit.poll(0.5, 1000)]
    return sorted({r.alert_name for r in records if r.action == "notify"})


def test_receivers_get_incidents_not_symptoms_by_default():
    assert notified("incidents") == ["pfc_storm"]
    assert notified("all") == ["pfc_storm", "queue_buildup"]
