"""The guarded runbooks: a link drain for ``faulty_link`` and ``link_flap`` incidents, a host-port
isolation for ``pfc_storm`` (the NIC, never a fabric link, is the problem there).

The drainer owns the runs. Incidents propose runs; a proposal waits ``confirm`` of event time
(hysteresis), then meets the guards (:mod:`remediation.drains.guards`); what happens next depends
on the
mode — the more cautious of the global mode and the runbook's own: ``dry_run`` records the
decision and touches nothing, ``approval`` waits for a person's command, ``auto`` goes ahead. The
steps themselves are in :mod:`remediation.drains.steps`. The drainer also holds the stop-automation
latch: when too much looks broken at once it cancels what has not touched the fabric yet, pages a
human (a ``remediation_halted`` alert) and refuses everything until a ``resume`` command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pipeline.errors import GuardRefused
from pipeline.kinds import LINK_INCIDENTS
from pipeline.model import ActionOutcome, ActionResult, Alert, Severity
from pipeline.topology.model import Topology
from pipeline.wire.commands import Approve, Command, Drain, Reject, Repair, Resume
from remediation.audit import Recorder
from remediation.drains.guards import (
    RUNBOOK_FOR,
    TRANSIENT,
    FabricState,
    Guards,
    Proposal,
    propose,
    requested,
)
from remediation.drains.runs import HOLDING, TOUCHING, Phase, Run, run_id
from remediation.drains.steps import Steps
from remediation.drains.switch import SwitchControl
from remediation.drains.te import TeController
from remediation.drains.telemetry import LinkTelemetry
from remediation.maintenance import MaintenanceDesk
from remediation.settings import RemediationSettings, most_cautious

NS = 1_000_000_000
HALT_ALERT = "remediation_halted"
MAX_RUNS = 2000


class Drainer:
    def __init__(self, settings: RemediationSettings, topology: Topology,
                 switches: SwitchControl | None, te: TeController | None,
                 telemetry: LinkTelemetry, recorder: Recorder,
                 maintenance: MaintenanceDesk | None = None,
                 page: Callable[[Alert], None] = lambda alert: None,
                 reached: Callable[[int], int | None] = lambda deadline_ns: None) -> None:
        self.settings = settings
        #: the event time at which the stream passed a deadline (remediation.clock), if known
        self.reached = reached
        self.topology = topology
        self.guards = Guards(settings.guards, topology)
        self.telemetry = telemetry
        self.recorder = recorder
        #: what is in maintenance (our runs' targets, links the TE controller holds drained)
        self.maintenance = maintenance or MaintenanceDesk(recorder.record)
        self.page = page
        self.te = te
        self.switches = switches
        self.steps = Steps(settings.drain, switches, te, telemetry, recorder.record,
                           self.maintenance.on_run, self._incident_on)
        self.runs: dict[str, Run] = {}
        self.active: dict[str, Run] = {}
        #: target → (proposal, attempts so far) refused by a guard that may lift
        self.deferred: dict[str, tuple[Proposal, int]] = {}
        self.incidents: dict[str, Alert] = {}
        self.started_ns: list[int] = []
        self.last_finished_ns: int | None = None
        self.target_finished_ns: dict[str, int] = {}
        self.halted: str | None = None
        self._halt_alert: Alert | None = None

    # -- input ---------------------------------------------------------------------------------

    def on_alerts(self, alerts: Iterable[Alert], now_ns: int) -> None:
        # a symptom matters here only when it was an incident, or is a run's or a proposal's
        watched = {r.alert.fingerprint for r in self.active.values()} | {
            p.alert.fingerprint for p, _ in self.deferred.values()}
        tracked = bool(self.incidents or watched)
        for alert in alerts:
            if not alert.root_cause and not tracked:
                continue
            fp = alert.fingerprint
            if not alert.root_cause and fp not in self.incidents and fp not in watched:
                continue
            if alert.name == HALT_ALERT:
                continue  # our own page, back from the alerts topic
            # what a maintenance caused (a drained link's link_down) is no incident of ours
            expected = alert.root_cause and self.maintenance.explaining(alert) is not None
            if alert.root_cause and alert.firing and not expected:
                self.incidents[fp] = alert
            else:
                self.incidents.pop(fp, None)
            for run in self.active.values():
                if run.alert.fingerprint == fp and alert.updated_ns >= run.alert.updated_ns:
                    run.alert = alert
            deferred = self.deferred.get(alert.entity)
            if deferred and deferred[0].alert.fingerprint == fp:
                if alert.firing:
                    self.deferred[alert.entity] = (replace(deferred[0], alert=alert), deferred[1])
                else:
                    del self.deferred[alert.entity]
            if alert.root_cause and alert.firing and alert.name in RUNBOOK_FOR and not expected:
                self._consider(alert, now_ns)
        self._check_halt(now_ns)

    def _consider(self, alert: Alert, now_ns: int) -> None:
        proposal = propose(alert, self.topology)
        if proposal is None or proposal.target in self.active or proposal.target in self.deferred:
            return
        if run_id(proposal) in self.runs:
            return  # this incident episode already had its run
        self._start(proposal, now_ns, 1)

    def _start(self, proposal: Proposal, now_ns: int, attempt: int) -> None:
        s = self.settings.drain
        book = s.link if proposal.runbook == "drain" else s.host
        if not book.enabled:
            return
        run = Run.start(proposal, most_cautious(self.settings.mode, book.mode), now_ns, attempt)
        self.runs[run.id] = run
        self.active[run.target] = run
        self.telemetry.watch(run.ports)
        self.steps.to(run, Phase.CONFIRMING, "pending", f"{proposal.alert.name} on "
                      f"{run.target}: attempt {attempt}, confirming for "
                      f"{self.settings.guards.confirm:.0f}s before the guards", now_ns,
                      step="proposed")

    def on_command(self, command: Command, now_ns: int) -> ActionResult:
        """Apply a person's command; the audit record says whether it took."""
        target = getattr(command, "target", "remediation")
        run = self.active.get(target)
        detail = ""
        outcome: ActionOutcome = "done"
        if isinstance(command, Drain):
            outcome, detail = self._requested(command, now_ns)
        elif isinstance(command, Resume):
            if self.halted:
                detail = f"automation resumed (was: {self.halted})"
                self.halted = None
                if self._halt_alert is not None:
                    self.page(self._halt_alert.model_copy(
                        update={"ends_ns": now_ns, "updated_ns": now_ns}))
                    self._halt_alert = None
            else:
                detail = "automation was not stopped"
        elif isinstance(command, (Approve, Reject)):
            if run is None or run.phase != Phase.AWAITING_APPROVAL or (
                    command.run and command.run != run.id):
                outcome, detail = "refused", f"nothing awaits approval on {target}"
            elif isinstance(command, Reject):
                self.steps.to(run, Phase.CANCELLED, "refused", f"rejected by {command.by}: "
                              f"{command.comment}", now_ns, step="approval")
                self._finish(run, now_ns, acted=False)
                detail = f"run {run.id} rejected"
            else:
                detail = self._approve(run, command, now_ns)
        elif isinstance(command, Repair):
            if run is None or run.phase != Phase.DRAINED:
                outcome, detail = "refused", f"{target} is not drained or isolated by us"
            else:
                run.repair = f"{command.action} by {command.by}"
                run.step("repair", "done", run.repair, now_ns, comment=command.comment)
                detail = f"repair recorded on run {run.id}; enabling and soaking next"
        return ActionResult(id=f"cmd.{command.id}", action="command", target=target,
                            mode=self.settings.mode, outcome=outcome,
                            detail=f"{command.kind} by {command.by}: {detail}",
                            steps=({"command": command.model_dump(mode="json")},), at_ns=now_ns)

    def _requested(self, command: Drain, now_ns: int) -> tuple[ActionOutcome, str]:
        """A person asks for a drain (or a host isolation): the runbook runs it at once, as if
        approved (guards still apply; in dry-run mode it is decided, nothing touched)."""
        target = command.target
        proposal = requested(target, command.by, command.comment, self.topology, now_ns)
        if proposal is None:
            return "refused", f"{target} is neither a fabric link nor a host"
        if target in self.active:
            run = self.active[target]
            return "refused", f"run {run.id} is already on {target} ({run.phase})"
        held = self.maintenance.book.get(target)
        if held is not None:
            return "refused", f"already in maintenance: {held.describe()}"
        s = self.settings.drain
        book = s.link if proposal.runbook == "drain" else s.host
        if not book.enabled:
            return "refused", f"the {proposal.runbook} runbook is disabled"
        self.deferred.pop(target, None)
        run = Run.start(proposal, most_cautious(self.settings.mode, book.mode), now_ns)
        self.runs[run.id] = run
        self.active[target] = run
        self.telemetry.watch(run.ports)
        run.step("proposed", "done", f"{proposal.runbook} {target} requested by "
                 f"{command.by}: {command.comment}", now_ns)
        self._decide(run, now_ns)
        if run.done:
            self._finish(run, now_ns, acted=run.acted)
        return ("refused" if run.phase == Phase.REFUSED else "done"), \
            f"run {run.id}: {run.phase}"

    def _approve(self, run: Run, command: Approve, now_ns: int) -> str:
        try:
            passed = self.guards.check(run.proposal, self.fabric(run), now_ns, approved=True)
        except GuardRefused as exc:
            self.steps.to(run, Phase.REFUSED, "refused", f"approved by {command.by}, but "
                          f"{exc.guard}: {exc.reason}", now_ns, step="guards", guard=exc.guard)
            self._finish(run, now_ns, acted=False)
            return f"approved, then refused by guard {exc.guard}"
        run.steps.extend(passed)
        run.step("approval", "done", f"approved by {command.by}: {command.comment}", now_ns)
        self._begin(run, now_ns, f"approved by {command.by}")
        return f"run {run.id} approved"

    # -- time ----------------------------------------------------------------------------------

    def tick(self, now_ns: int) -> None:
        self.maintenance.tick(now_ns)
        self.steps.retry_owed(now_ns)
        self._retry_deferred(now_ns)
        for run in list(self.active.values()):
            for _ in range(12):  # follow a run through the phases that need no waiting
                before = (run.phase, run.seq)
                self._advance(run, now_ns)
                if run.phase == Phase.DRAINED and before[0] != Phase.DRAINED:
                    self.last_finished_ns = now_ns  # the fabric changed: cool-down from here
                if run.done:
                    self._finish(run, now_ns, acted=run.acted)
                    break
                if (run.phase, run.seq) == before:
                    break

    def _retry_deferred(self, now_ns: int) -> None:
        """Proposals refused by a guard that may lift are checked again, silently, each tick;
        a new run (recorded) starts once every guard would pass (CorrOpt re-runs its selection
        whenever the fabric changes)."""
        for target, (proposal, attempts) in list(self.deferred.items()):
            if target in self.active:
                continue
            try:
                self.guards.check(proposal, self.fabric(), now_ns)
            except GuardRefused:
                continue
            del self.deferred[target]
            self._start(proposal, now_ns, attempts + 1)

    def _advance(self, run: Run, now_ns: int) -> None:
        g = self.settings.guards
        if run.phase == Phase.CONFIRMING:
            if not run.alert.firing:
                self.steps.to(run, Phase.CANCELLED, "skipped", "the incident resolved before "
                              "it was confirmed", now_ns, step="confirm")
            elif now_ns - run.alert.starts_ns >= g.confirm * NS:
                # on event time: a tick that runs late (its thread was busy while the stream
                # moved on) decides at the event time the stream passed the confirmation
                passed = self.reached(max(run.alert.starts_ns + int(g.confirm * NS),
                                          run.since_ns))
                self._decide(run, now_ns if passed is None else min(now_ns, passed))
        elif run.phase == Phase.AWAITING_APPROVAL:
            if not run.alert.firing:
                self.steps.to(run, Phase.CANCELLED, "skipped", "the incident resolved while "
                              "awaiting approval", now_ns, step="approval")
            elif now_ns - run.since_ns >= g.approval_timeout * NS:
                self.steps.to(run, Phase.CANCELLED, "refused", f"no approval within "
                              f"{g.approval_timeout:.0f}s", now_ns, step="approval")
        elif run.phase == Phase.DRAINED:
            if run.repair and self.fabric(run).busy is None:
                run.move(Phase.ENABLE, now_ns)
        elif run.phase in TOUCHING:
            if run.phase in (Phase.TE_PRE, Phase.DISABLE) and self.fabric(run).busy:
                return  # one at a time: wait for the other run to settle
            self.steps.advance(run, now_ns)

    def _decide(self, run: Run, now_ns: int) -> None:
        passed: list[dict[str, Any]] = []
        asked = bool(run.requested_by)  # a person's command is their approval
        try:
            self.guards.check(run.proposal, self.fabric(run), now_ns, approved=asked,
                              passed=passed)
            run.steps.extend(passed)
            if run.mode != "dry_run":
                self._can_act(run)
        except GuardRefused as exc:
            run.steps.extend(passed)
            retry = exc.guard in TRANSIENT and run.alert.firing and not asked
            if retry:
                self.deferred[run.target] = (run.proposal, run.attempt)
            self.steps.to(run, Phase.REFUSED, "refused", f"{exc.guard}: {exc.reason}"
                          + ("; will retry while the incident fires" if retry else ""), now_ns,
                          step="guards", guard=exc.guard)
            return
        if run.mode == "dry_run":
            run.acted = True
            self.started_ns.append(now_ns)
            self.steps.to(run, Phase.DECIDED, "done", f"dry-run: would {run.action} "
                          f"{run.target} ({', '.join(map(str, run.ports))}); planned: "
                          f"{' -> '.join(self._plan(run))}; nothing touched", now_ns,
                          step="decision")
        elif run.mode == "approval" and not asked:
            self.steps.to(run, Phase.AWAITING_APPROVAL, "pending", f"guards passed; awaiting "
                          f"approval: send an approve command for {run.target} (run {run.id})",
                          now_ns, step="decision")
        else:
            why = f"requested by {run.requested_by}" if asked else "auto"
            self._begin(run, now_ns, f"guards passed ({why})")

    def _can_act(self, run: Run) -> None:
        if self.switches is None:
            raise GuardRefused("devices", "no device directory: set remediation.gnmi")
        if run.runbook == "drain" and self.te is None:
            raise GuardRefused("te_controller", "a drain must tell the TE controller before "
                               "and after; set remediation.te_controller")

    def _begin(self, run: Run, now_ns: int, why: str) -> None:
        run.acted = True
        self.started_ns.append(now_ns)
        first = Phase.TE_PRE if run.runbook == "drain" else Phase.DISABLE
        self.steps.to(run, first, "pending", f"{why}; starting: {' -> '.join(self._plan(run))}",
                      now_ns, step="decision")

    @staticmethod
    def _plan(run: Run) -> list[str]:
        ports = ", ".join(map(str, run.ports))
        if run.runbook == "drain":
            return ["tell TE (before)", "verify traffic left", f"disable {ports}",
                    "verify down", "tell TE (after)", "hold until repair + soak"]
        return [f"disable {ports}", "verify down", "hold until repair + soak"]

    def _finish(self, run: Run, now_ns: int, acted: bool) -> None:
        self.active.pop(run.target, None)
        self.telemetry.unwatch(run.ports)
        if acted:
            self.last_finished_ns = now_ns
            self.target_finished_ns[run.target] = now_ns
        cutoff = now_ns - 3600 * NS
        self.started_ns = [t for t in self.started_ns if t >= cutoff]
        if len(self.runs) > MAX_RUNS:  # forget the oldest finished runs
            for rid in [r.id for r in sorted(self.runs.values(), key=lambda r: r.created_ns)
                        if r.done][: len(self.runs) - MAX_RUNS]:
                del self.runs[rid]

    # -- the fabric as the guards see it -------------------------------------------------------

    def fabric(self, run: Run | None = None) -> FabricState:
        others = [r for r in self.active.values() if r is not run]
        drained = {r.target for r in others if r.runbook == "drain" and r.phase in HOLDING}
        down = self.guards.links_of_ports(sorted(self.telemetry.down_ports()))
        down |= self.maintenance.te_drained  # drained by someone else: unavailable too
        busy = next((r.target for r in others if r.phase in TOUCHING), None)
        return FabricState(
            drained=drained, down=down - drained,
            isolated_hosts={r.target for r in others
                            if r.runbook == "isolate" and r.phase in HOLDING},
            busy=busy, started_ns=list(self.started_ns), last_finished_ns=self.last_finished_ns,
            target_finished_ns=dict(self.target_finished_ns), halted=self.halted)

    def _incident_on(self, target: str, since_ns: int) -> bool:
        """A root-cause incident on ``target`` that started at or after ``since_ns`` fires."""
        return any(a.entity == target and a.starts_ns >= since_ns
                   for a in self.incidents.values())

    # -- stop automation when too much looks broken --------------------------------------------

    def _check_halt(self, now_ns: int) -> None:
        if self.halted:
            return
        g = self.settings.guards
        entities = {a.entity for a in self.incidents.values()}
        links = {a.entity for a in self.incidents.values() if a.name in LINK_INCIDENTS}
        link_limit = max(1, math.floor(g.halt_link_fraction * len(self.topology.links)))
        reason = ""
        if len(entities) >= g.halt_incidents:
            reason = (f"{len(entities)} root-cause incidents at once (limit "
                      f"{g.halt_incidents - 1}): {', '.join(sorted(entities)[:8])}")
        elif len(links) > link_limit:
            reason = (f"{len(links)} of {len(self.topology.links)} links look broken at once "
                      f"(limit {link_limit}): {', '.join(sorted(links)[:8])}")
        if not reason:
            return
        self.halted = reason
        for run in list(self.active.values()):
            if run.phase in (Phase.CONFIRMING, Phase.AWAITING_APPROVAL, Phase.TE_PRE,
                             Phase.VERIFY_TRAFFIC):
                if run.te_told and self.te is not None:
                    self.steps.try_cancel(run, "automation stopped")
                    run.te_told = False
                if run.alert.firing:  # tried again after a resume, if it still fires
                    self.deferred[run.target] = (run.proposal, run.attempt)
                self.steps.to(run, Phase.CANCELLED, "refused", f"automation stopped: {reason}",
                              now_ns, step="halt")
                self._finish(run, now_ns, acted=False)
        self.recorder.record(ActionResult(
            action="halt", target="remediation", mode=self.settings.mode, outcome="done",
            detail=f"automation stopped, paging a human: {reason}; send a resume command "
                   "once the fabric is understood", at_ns=now_ns))
        self.page_halt(now_ns)

    def page_halt(self, now_ns: int) -> None:
        """Page a human about the stop-automation latch (also after a restart that restored it)."""
        if not self.halted:
            return
        reason = self.halted
        self._halt_alert = Alert(
            name=HALT_ALERT, entity="remediation", severity=Severity.CRITICAL,
            annotations={"summary": f"remediation stopped itself: {reason}"},
            starts_ns=now_ns, updated_ns=now_ns, source="remediation")
        self.page(self._halt_alert)
