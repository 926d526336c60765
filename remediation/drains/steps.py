"""The runbook steps that touch the world: TE notices, port disable/enable over gNMI, and the
checks between them (traffic gone, ports down, a clean soak). Each takes a run in one phase and
moves it to the next, or leaves it waiting; a failure rolls back what the run did.

The owner of the runs (:class:`remediation.drains.runbook.Drainer`) calls :meth:`Steps.advance` on
every tick with event time; the steps never read a clock. A TE notice the controller cannot take
now (:class:`~remediation.drains.te.TeRetryLater`) leaves the run in its step, to be made again
on a later tick (the client spaces the tries and says when they are spent); a rollback's notice
that cannot be made now is owed, and :meth:`Steps.retry_owed` makes it on later ticks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.errors import RemediationError
from pipeline.model import ActionOutcome, ActionResult
from pipeline.topology.model import Port
from remediation.drains.runs import Phase, Run
from remediation.drains.switch import SwitchControl
from remediation.drains.te import TeController, TeRetryLater
from remediation.drains.telemetry import UP, LinkTelemetry
from remediation.settings import DrainSettings

NS = 1_000_000_000


class Steps:
    def __init__(self, settings: DrainSettings, switches: SwitchControl | None,
                 te: TeController | None, telemetry: LinkTelemetry,
                 record: Callable[[ActionResult], None],
                 on_phase: Callable[[Run, int], None],
                 incident_on: Callable[[str, int], bool]) -> None:
        self.s = settings
        self.switches = switches
        self.te = te
        self.telemetry = telemetry
        self._record = record
        #: told after every move (the target's maintenance follows the phase)
        self._on_phase = on_phase
        self._incident_on = incident_on
        #: target → (the run, the reason): rollbacks whose "keep the link" notice is still owed
        self.owed: dict[str, tuple[Run, str]] = {}

    # -- bookkeeping ---------------------------------------------------------------------------

    def to(self, run: Run, phase: Phase, outcome: ActionOutcome, detail: str,
           now_ns: int, step: str = "", **extra: Any) -> None:
        """Move ``run`` to ``phase``, log the step and publish the audit record."""
        name = step or str(phase)
        action = run.action_for(name)
        run.step(name, "failed" if outcome == "failed" else "done"
                 if outcome != "pending" else "pending", detail, now_ns, **extra)
        run.move(phase, now_ns)
        self._record(run.record(outcome, detail, now_ns, action))
        self._on_phase(run, now_ns)

    def _switches(self) -> SwitchControl:
        if self.switches is None:
            raise RemediationError("no device directory: runbooks cannot reach switches")
        return self.switches

    def _te(self) -> TeController:
        if self.te is None:
            raise RemediationError("no TE controller is configured")
        return self.te

    # -- the phases ----------------------------------------------------------------------------

    def advance(self, run: Run, now_ns: int) -> None:
        handler = {
            Phase.TE_PRE: self._te_pre, Phase.VERIFY_TRAFFIC: self._verify_traffic,
            Phase.DISABLE: self._disable, Phase.VERIFY_DOWN: self._verify_down,
            Phase.TE_POST: self._te_post, Phase.ENABLE: self._enable, Phase.SOAK: self._soak,
            Phase.TE_RESTORE: self._te_restore,
        }.get(run.phase)
        if handler is not None:
            handler(run, now_ns)

    def _te_pre(self, run: Run, now_ns: int) -> None:
        if run.target in self.owed:
            return  # an earlier run's "keep the link" must reach the controller first
        evidence = {"alert": run.alert.name, "fingerprint": run.alert.fingerprint,
                    "confidence": run.alert.confidence, **run.alert.evidence}
        try:
            said = self._te().announce(run.target, f"{run.alert.name} on {run.target}", evidence)
        except TeRetryLater:
            return
        except RemediationError as exc:
            self.to(run, Phase.FAILED, "failed", f"TE controller not told, nothing touched: {exc}",
                    now_ns, step="te_pre")
            return
        run.te_told = True
        self.to(run, Phase.VERIFY_TRAFFIC, "pending", f"TE controller told before the drain: "
                f"{said}", now_ns, step="te_pre")

    def _verify_traffic(self, run: Run, now_ns: int) -> None:
        rates = [self.telemetry.gbps(p) for p in run.ports]
        fresh = [r for r in rates if r is not None and r[0] > max(run.checked_ns, run.since_ns)]
        worst = max((g for _, g in fresh), default=None)
        if len(fresh) == len(rates) and worst is not None:  # one new sample at every end
            run.checked_ns = min(ts for ts, _ in fresh)
            run.quiet_samples = run.quiet_samples + 1 if worst <= self.s.residual_gbps else 0
        if run.quiet_samples >= self.s.verify_samples:
            self.to(run, Phase.DISABLE, "pending", f"traffic left the link: {worst:.3f} Gbit/s "
                    f"<= {self.s.residual_gbps} over {run.quiet_samples} samples", now_ns,
                    step="verify_traffic", gbps=worst)
            return
        if now_ns - run.since_ns < self.s.verify_timeout * NS:
            return
        seen = "no fresh telemetry" if worst is None else f"{worst:.3f} Gbit/s still flowing"
        if self.s.on_residual == "proceed":
            self.to(run, Phase.DISABLE, "pending", f"{seen} after {self.s.verify_timeout:.0f}s; "
                    "proceeding (on_residual: proceed)", now_ns, step="verify_traffic")
            return
        self._abort(run, now_ns, f"{seen} after {self.s.verify_timeout:.0f}s (on_residual: "
                    "abort)", step="verify_traffic")

    def _disable(self, run: Run, now_ns: int) -> None:
        said = []
        for port in run.ports:
            if port in run.disabled:
                continue
            try:
                said.append(self._switches().set_enabled(port, False))
            except RemediationError as exc:
                self._abort(run, now_ns, f"disable {port} failed: {exc}", step="disable")
                return
            run.disabled.append(port)
        self.to(run, Phase.VERIFY_DOWN, "pending", "; ".join(said), now_ns, step="disable")

    def _verify_down(self, run: Run, now_ns: int) -> None:
        states = []
        try:
            states = [(p, self._switches().status(p)) for p in run.ports]
        except RemediationError as exc:
            run.tries += 1
            problem = str(exc)
        else:
            if all(st.down for _, st in states):
                detail = "; ".join(f"{p} admin {st.admin} oper {st.oper}" for p, st in states)
                nxt = Phase.TE_POST if run.runbook == "drain" else Phase.DRAINED
                outcome: ActionOutcome = "pending" if nxt == Phase.TE_POST else "done"
                self.to(run, nxt, outcome, f"down: {detail}", now_ns, step="verify_down")
                return
            problem = "; ".join(f"{p} admin {st.admin} oper {st.oper}" for p, st in states)
        if now_ns - run.since_ns >= self.s.down_timeout * NS:
            self._abort(run, now_ns, f"not down after {self.s.down_timeout:.0f}s: {problem}",
                        step="verify_down")

    def _te_post(self, run: Run, now_ns: int) -> None:
        try:
            said = self._te().confirm(run.target)
        except TeRetryLater:
            return
        except RemediationError as exc:
            self.to(run, Phase.DRAINED, "done", f"drained; TE controller NOT told after the "
                    f"drain ({exc}): tell it by hand", now_ns, step="te_post")
            return
        self.to(run, Phase.DRAINED, "done", f"drained; TE controller told after: {said}",
                now_ns, step="te_post")

    def _enable(self, run: Run, now_ns: int) -> None:
        enabled: list[Port] = []
        for port in run.ports:
            try:
                self._switches().set_enabled(port, True)
            except RemediationError as exc:
                for done in enabled:  # back to the drained state we know
                    self.try_set(done, False)
                run.repair = ""
                self.to(run, Phase.DRAINED, "failed", f"enable {port} failed, still drained: "
                        f"{exc}", now_ns, step="enable")
                return
            enabled.append(port)
        run.disabled = [p for p in run.disabled if p not in enabled]
        self.telemetry.watch(run.ports)
        run.soak_errors = sum(self.telemetry.error_total(p) for p in run.ports)
        run.soak_samples = {str(p): self.telemetry.samples(p)[0] for p in run.ports}
        self.to(run, Phase.SOAK, "pending", f"enabled after repair ({run.repair}); soaking "
                f"{self.s.soak:.0f}s", now_ns, step="enable")

    def _soak(self, run: Run, now_ns: int) -> None:
        errors = sum(self.telemetry.error_total(p) for p in run.ports) - run.soak_errors
        problem = ""
        if errors > 0:
            problem = f"{errors:.0f} error-counter increments during the soak"
        elif self._incident_on(run.target, run.since_ns):
            problem = f"a new incident fired on {run.target} during the soak"
        if problem:
            for port in run.ports:
                self.try_set(port, False)
            run.disabled = list(run.ports)
            run.repair = ""
            self.to(run, Phase.DRAINED, "failed", f"soak failed, disabled again: {problem}",
                    now_ns, step="soak")
            return
        elapsed = (now_ns - run.since_ns) / NS
        if elapsed < self.s.soak:
            return
        fresh = {str(p): self.telemetry.samples(p)[0] - run.soak_samples.get(str(p), 0)
                 for p in run.ports}
        up = all(self.telemetry.status(p)[0] == UP for p in run.ports)
        if up and min(fresh.values()) >= self.s.soak_min_samples:
            nxt = Phase.TE_RESTORE if run.runbook == "drain" else Phase.RESTORED
            outcome: ActionOutcome = "pending" if nxt == Phase.TE_RESTORE else "done"
            self.to(run, nxt, outcome, f"soak clean for {elapsed:.0f}s: 0 errors, samples "
                    f"{fresh}", now_ns, step="soak")
            return
        if elapsed >= 2 * self.s.soak:
            for port in run.ports:
                self.try_set(port, False)
            run.repair = ""
            self.to(run, Phase.DRAINED, "failed", f"soak could not be verified (up={up}, "
                    f"samples {fresh}); disabled again", now_ns, step="soak")

    def _te_restore(self, run: Run, now_ns: int) -> None:
        try:
            said = self._te().restore(run.target)
        except TeRetryLater:
            return
        except RemediationError as exc:
            self.to(run, Phase.RESTORED, "failed", f"link up and clean, but the TE controller "
                    f"did not take the restore ({exc}): tell it by hand", now_ns,
                    step="te_restore")
            return
        self.to(run, Phase.RESTORED, "done", f"back in service; TE controller told: {said}",
                now_ns, step="te_restore")

    # -- undo ----------------------------------------------------------------------------------

    def _abort(self, run: Run, now_ns: int, reason: str, step: str) -> None:
        """Undo what the run did (ports re-enabled, TE told), then fail it."""
        undone = []
        for port in list(run.disabled):
            if self.try_set(port, True):
                run.disabled.remove(port)
                undone.append(f"re-enabled {port}")
            else:
                undone.append(f"COULD NOT re-enable {port}")
        if run.te_told:
            undone.append(self.try_cancel(run, reason))
        rollback = f"; rolled back: {', '.join(undone)}" if undone else ""
        self.to(run, Phase.FAILED, "failed", f"{reason}{rollback}", now_ns, step=step)

    def try_set(self, port: Port, enabled: bool) -> bool:
        """Best effort, during a rollback: False when the switch did not take it."""
        try:
            self._switches().set_enabled(port, enabled)
        except RemediationError:
            return False
        return True

    def try_cancel(self, run: Run, reason: str) -> str:
        """Tell the controller to keep ``run``'s link in service (a rollback, best effort); what
        came of it. One the controller cannot take now is owed (:meth:`retry_owed`)."""
        try:
            self._te().cancel(run.target, reason)
        except TeRetryLater as exc:
            self.owed[run.target] = (run, reason)
            return f"TE not told yet to keep the link ({exc})"
        except RemediationError as exc:
            return f"TE cancel FAILED ({exc})"
        return "TE told to keep the link"

    def retry_owed(self, now_ns: int) -> None:
        """Make the owed "keep the link" notices whose wait is over; each outcome goes on its
        run's audit trail."""
        for target, (run, reason) in list(self.owed.items()):
            try:
                said = self._te().cancel(target, reason)
            except TeRetryLater:
                continue
            except RemediationError as exc:
                del self.owed[target]
                self._record(run.record("failed", f"TE cancel FAILED ({exc}): tell it by hand "
                                        f"to keep {target} in service", now_ns))
                continue
            del self.owed[target]
            self._record(run.record("done", f"TE told to keep the link: {said}", now_ns))
