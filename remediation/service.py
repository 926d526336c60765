"""Remediation assembled for one process: the bus in, the lifecycle and the runbooks, the audit
trail out, the heartbeat, and the state that survives restarts.

Inputs: the alerts and commands topics (consumer group ``remediation``) and the samples topic
(group ``remediation-telemetry``: the event-time watermark and the link telemetry the drain
checks need). Alerts go straight to the lifecycle; runbook inputs (alerts, approvals, repairs,
resume) go through a queue to the runbook job, so runbooks run on one thread and the slow I/O of
a drain step never holds up notifications. Bad input (a garbage alert list, a malformed command,
an undecodable sample batch) follows the wire's one policy (:mod:`pipeline.wire.deadletter`): it
is parked on the dead-letter topic with its origin and reason, counted, answered where a person is
waiting for it (a refused command), and never stops the loop or loses the good items around it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline.bus.base import Bus, Message, Topics
from pipeline.entities import entity_kind
from pipeline.errors import ConfigError, RemediationError
from pipeline.model import ActionOutcome, ActionResult, Alert
from pipeline.topology.model import Topology
from pipeline.wire.alerts import decode_alerts, encode_alerts
from pipeline.wire.commands import Command, ExpireSilence, Silence, decode_command
from pipeline.wire.deadletter import DeadLetter, DeadLetters
from pipeline.wire.samples import decode_samples
from remediation import state
from remediation.alerting.assemble import Alerting, build_receivers
from remediation.audit import Recorder
from remediation.clock import EventClock
from remediation.drains.runbook import Drainer
from remediation.drains.switch import SwitchControl
from remediation.drains.te import HttpTe, TeController
from remediation.drains.telemetry import LinkTelemetry
from remediation.maintenance import MaintenanceDesk
from remediation.receivers.base import Receiver
from remediation.scheduler import Heartbeat
from remediation.settings import RemediationSettings

log = logging.getLogger("rocewatch.remediation")
GROUP = "remediation"
TELEMETRY_GROUP = "remediation-telemetry"


@dataclass
class RouterStats:
    alert_messages: int = 0
    alerts: int = 0
    bad_alerts: int = 0
    commands: int = 0
    bad_commands: int = 0
    sample_batches: int = 0
    bad_samples: int = 0
    te_watch_failures: int = 0


def lab_te_url(agents_file: str) -> str:
    """The lab writes its TE controller's URL into ``agents.json``; empty when there is none."""
    if not agents_file:
        return ""
    try:
        doc = json.loads(Path(agents_file).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the lab's agents file {agents_file}: {exc}") from exc
    url = doc.get("te_controller", "") if isinstance(doc, dict) else ""
    return url if isinstance(url, str) else ""


class Remediation:
    def __init__(self, settings: RemediationSettings, bus: Bus, topics: Topics,
                 topology: Topology | None, site: str = "rocewatch",
                 receivers: dict[str, Receiver] | None = None,
                 switches: SwitchControl | None = None, te: TeController | None = None,
                 clock: EventClock | None = None) -> None:
        self.settings = settings
        self.topics = topics
        self.clock = clock or EventClock(settings.clock.time, settings.clock.idle_after)
        self.producer = bus.producer()
        self.recorder = Recorder(self.producer, topics.actions)
        self.maintenance = MaintenanceDesk(self.recorder.record)
        self.alerting = Alerting(settings, receivers if receivers is not None
                                 else build_receivers(settings.receivers, site), self.recorder,
                                 maintained=lambda a: self.maintenance.muting(a) is not None,
                                 wall_offset=self.clock.wall_offset_ns,
                                 kind_of=lambda e: entity_kind(e, self.topology_source()))
        self.telemetry = LinkTelemetry()
        self.switches = switches if switches is not None else self._switches()
        te_url = settings.te_controller or lab_te_url(settings.gnmi.lab_agents_file)
        self.te = te if te is not None else (HttpTe(te_url, settings.te) if te_url else None)
        self.topology = topology
        #: where a topology learned after start comes from (the stage context's)
        self.topology_source: Callable[[], Topology | None] = lambda: self.topology
        self.drainer: Drainer | None = None
        self.inbox: queue.Queue[tuple[str, Any, int]] = queue.Queue()
        self.stats = RouterStats()
        self._seen_commands: dict[str, None] = {}
        self._saved_at = -1
        #: the watermark the runbook job was last woken for
        self._woken_ns = 0
        self._state = state.load(settings.state_path) if settings.state_path else {}
        if self._state:
            state.restore(self._state, None, self.alerting.silences)
        self._make_drainer(topology)
        bus.ensure_topics(topics.all())
        self._alerts_in = bus.consumer([topics.alerts, topics.commands], GROUP)
        self._samples_in = bus.consumer([topics.samples], TELEMETRY_GROUP)
        self.letters = DeadLetters(GROUP, self.producer, topics.deadletter)
        self.telemetry_letters = DeadLetters(TELEMETRY_GROUP, self.producer, topics.deadletter)
        self.heartbeat = Heartbeat()

    def _switches(self) -> SwitchControl | None:
        g = self.settings.gnmi
        if not (g.targets_file or g.lab_agents_file or g.devices):
            return None
        from remediation.drains.devices import DeviceDirectory
        from remediation.drains.switch import GnmiSwitches

        return GnmiSwitches(DeviceDirectory(g), g.timeout)

    def _make_drainer(self, topology: Topology | None) -> None:
        if topology is None or self.drainer is not None:
            return
        self.topology = topology
        self.drainer = Drainer(self.settings, topology, self.switches, self.te, self.telemetry,
                               self.recorder, self.maintenance, page=self.page,
                               reached=self.clock.reached)
        if self._state:
            state.restore({k: v for k, v in self._state.items() if k != "silences"},
                          self.drainer, self.alerting.silences)
            now = self.clock.now_ns()
            self.maintenance.restored(self.drainer.active, now)
            self.drainer.page_halt(now)

    # -- bus input -----------------------------------------------------------------------------

    def poll(self, timeout_s: float = 0.05) -> int:
        """One round: alerts and commands, then telemetry; returns messages handled."""
        msgs = self._alerts_in.poll(timeout_s, max_records=500)
        for msg in msgs:
            if msg.topic == self.topics.alerts:
                self.on_alerts_message(msg)
            else:
                self.on_command_message(msg)
        if msgs:
            self.letters.flush()
            self._alerts_in.commit()
        batches = self._samples_in.poll(0.0 if msgs else timeout_s, max_records=200)
        for msg in batches:
            self.on_samples_message(msg)
        if batches:
            self.telemetry_letters.flush()
            self._samples_in.commit()
        return len(msgs) + len(batches)

    def _advance(self, event_ns: int) -> None:
        """Event time moves to ``event_ns``: what came due before it is done first, on event
        time, not a heartbeat later (however far behind the wall clock this process runs):
        groups flush at their due times, and the runbook job is woken (timeouts, confirmations
        and soaks are on event time)."""
        if event_ns > self._woken_ns:
            self._woken_ns = event_ns
            self.alerting.advance(event_ns)
            self.heartbeat.wake("runbooks")
        self.clock.observe(event_ns)  # also: data arrived (the clock is not idle)

    def on_alerts_message(self, msg: Message) -> None:
        decoded = self.letters.read_items(msg, decode_alerts)
        self.stats.alert_messages += 1
        if isinstance(decoded, DeadLetter):
            self.stats.bad_alerts += 1
            return
        alerts = decoded.items
        self.stats.alerts += len(alerts)
        self.stats.bad_alerts += decoded.bad_count
        if not alerts:
            return
        self._advance(max(alert.updated_ns for alert in alerts))
        now = self.clock.now_ns()
        notify = alerts if self.settings.notify == "all" else [a for a in alerts if a.root_cause]
        self.alerting.ingest(notify, now)
        self.inbox.put(("alerts", alerts, now))
        self.heartbeat.wake("runbooks")

    def on_samples_message(self, msg: Message) -> None:
        decoded = self.telemetry_letters.read_items(msg, decode_samples)
        if isinstance(decoded, DeadLetter):
            self.stats.bad_samples += 1
            return
        batch = decoded.items
        self.stats.sample_batches += 1
        if len(batch):
            self._advance(int(batch.ts_ns.max()))
            self.telemetry.observe(batch)

    def on_command_message(self, msg: Message) -> None:
        now = self.clock.now_ns()
        command = self.letters.read(msg, decode_command)
        if isinstance(command, DeadLetter):
            self.stats.bad_commands += 1
            self.recorder.record(ActionResult(
                action="command", target="remediation", mode=self.settings.mode,
                outcome="refused", detail=f"command refused: {command.reason}"[:1000],
                at_ns=now))
            return
        if command.id in self._seen_commands:
            return  # delivered twice
        self._seen_commands[command.id] = None
        if len(self._seen_commands) > 10_000:
            del self._seen_commands[next(iter(self._seen_commands))]
        self.stats.commands += 1
        if isinstance(command, (Silence, ExpireSilence)):
            self.recorder.record(self._silence_command(command, now))
        else:
            self.inbox.put(("command", command, now))
            self.heartbeat.wake("runbooks")

    def _silence_command(self, command: Silence | ExpireSilence, now: int) -> ActionResult:
        outcome: ActionOutcome
        if isinstance(command, Silence):
            start = command.starts_ns or now
            if command.ends_ns <= start:
                outcome, detail = "refused", "the silence ends before it starts"
            else:
                sid = self.alerting.silence(command.matchers, start, command.ends_ns,
                                            command.by, command.comment, sid=command.id[:16])
                outcome, detail = "done", f"silence {sid} on {', '.join(command.matchers)}"
        elif self.alerting.expire(command.silence_id, now):
            outcome, detail = "done", f"silence {command.silence_id} expired"
        else:
            outcome, detail = "refused", f"no silence {command.silence_id}"
        return ActionResult(id=f"cmd.{command.id}", action="command", target="silences",
                            mode=self.settings.mode, outcome=outcome,
                            detail=f"{command.kind} by {command.by}: {detail}",
                            steps=({"command": command.model_dump(mode="json")},), at_ns=now)

    def page(self, alert: Alert) -> None:
        """Remediation's own alerts go through the lifecycle and onto the alerts topic."""
        self.alerting.ingest([alert], max(alert.updated_ns, self.clock.now_ns()))
        self.producer.send(self.topics.alerts, encode_alerts([alert]), key=b"remediation")

    # -- the heartbeat's jobs ------------------------------------------------------------------

    def alerts_tick(self) -> None:
        self.alerting.tick(self.clock.now_ns())

    def runbooks_tick(self) -> None:
        if self.drainer is None:
            self._make_drainer(self.topology_source())
        while True:
            try:
                kind, item, at = self.inbox.get_nowait()
            except queue.Empty:
                break
            if self.drainer is None:
                if kind == "command":
                    self.recorder.record(self._no_runbooks(item, at))
                continue
            if kind == "alerts":
                self.drainer.on_alerts(item, at)
            elif kind == "te_state":
                self.maintenance.on_te_state(item, self.drainer.topology, at)
            else:
                self.recorder.record(self.drainer.on_command(item, at))
        if self.drainer is not None:
            self.drainer.tick(self.clock.now_ns())
        self.save()

    def _no_runbooks(self, command: Command, at: int) -> ActionResult:
        return ActionResult(action="command", target=getattr(command, "target", "remediation"),
                            mode=self.settings.mode, outcome="refused",
                            detail=f"{command.kind} by {command.by}: no topology is known, so "
                                   "no runbook runs", at_ns=at)

    def housekeeping(self) -> None:
        self.alerting.gc(self.clock.now_ns())

    def te_watch(self) -> None:
        """Ask the TE controller what it holds drained; the runbook job takes the answer."""
        if self.te is None:
            return
        try:
            drained = self.te.drains()
        except RemediationError as exc:  # TeRetryLater included: the next watch asks again
            self.stats.te_watch_failures += 1
            if self.stats.te_watch_failures in (1, 10, 100) or \
                    self.stats.te_watch_failures % 1000 == 0:
                log.warning("cannot ask the TE controller what it holds drained (%d times so "
                            "far): %s", self.stats.te_watch_failures, exc)
            return
        self.inbox.put(("te_state", drained, self.clock.now_ns()))
        self.heartbeat.wake("runbooks")

    def save(self) -> None:
        """Snapshot the state when something other than a notification was recorded."""
        count = self.recorder.changes
        if not self.settings.state_path or count == self._saved_at:
            return
        state.save(self.settings.state_path, state.snapshot(self.drainer, self.alerting.silences))
        self._saved_at = count

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        tick = self.settings.clock.tick
        self.heartbeat.every("alerts", tick, self.alerts_tick)
        self.heartbeat.every("runbooks", tick, self.runbooks_tick)
        self.heartbeat.every("housekeeping", 30.0, self.housekeeping)
        if self.te is not None and self.settings.te.watch > 0:
            self.heartbeat.every("te_watch", self.settings.te.watch, self.te_watch)
        self.heartbeat.start()
        try:
            while not stop.is_set():
                self.poll(0.1)
        finally:
            self.close()

    def health(self) -> dict[str, Any]:
        d = self.drainer
        return {**asdict(self.stats), **self.alerting.stats(),
                "dead_letters": {GROUP: asdict(self.letters.stats),
                                 TELEMETRY_GROUP: asdict(self.telemetry_letters.stats)},
                "watermark_ns": self.clock.watermark_ns,
                "runs_active": {t: str(r.phase) for t, r in d.active.items()} if d else {},
                "halted": d.halted if d else None,
                "maintenance": [m.describe() for m in self.maintenance.open()],
                "audit_publish_failures":
                    self.recorder.failures, "jobs": dict(self.heartbeat.runs),
                "job_errors": dict(self.heartbeat.errors), "heartbeat": self.heartbeat.stats()}

    def close(self) -> None:
        self.heartbeat.stop()
        self.alerting.close()
        self.save()
        for consumer in (self._alerts_in, self._samples_in):
            consumer.close()
        self.producer.flush()
        self.producer.close()
        for closable in (self.switches, self.te):
            close = getattr(closable, "close", None)
            if close is not None:
                close()
