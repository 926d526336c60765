"""Remediation's side of maintenance (:mod:`pipeline.maintenance`): it owns the state and
publishes it.

Three sources put a target in maintenance:

* a runbook run (an incident's, or a person's ``drain`` command): held from the moment the TE
  controller is told until the port is enabled again after a repair, soaking until it is
  restored, ended when it is restored or the drain rolled back (:data:`HELD`, :data:`SOAKING`);
* the TE controller: a link it reports drained that no run of ours drained (someone drained it
  there) is held until the controller reports it undrained.

Every change is an audit record on the actions topic (``action: maintenance``), re-published
every :data:`~pipeline.maintenance.REPUBLISH_NS` of event time while it lasts, so detection, the
store and the read side know it; the same book mutes notifications about what the maintenance
caused (:meth:`MaintenanceDesk.muting`) and keeps such alerts from proposing runbooks or tripping
the stop-automation latch (:meth:`MaintenanceDesk.explaining`). Thread-safe: the lifecycle asks
from the bus and delivery threads while the runbook thread changes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pipeline.maintenance import (
    REPUBLISH_NS,
    Maintenance,
    MaintenanceBook,
    State,
    ended,
    record,
)
from pipeline.model import ActionResult, Alert
from pipeline.topology.model import Topology
from remediation.drains.runs import Phase, Run
from remediation.drains.te import REQUESTED_BY

#: run phases in which the target is held (traffic moved off, or the port disabled)
HELD = frozenset({Phase.TE_PRE, Phase.VERIFY_TRAFFIC, Phase.DISABLE, Phase.VERIFY_DOWN,
                  Phase.TE_POST, Phase.DRAINED})
#: enabled again after a repair, on trial until restored
SOAKING = frozenset({Phase.ENABLE, Phase.SOAK, Phase.TE_RESTORE})


class MaintenanceDesk:
    def __init__(self, record_fn: Callable[[ActionResult], None]) -> None:
        self._record = record_fn
        self._lock = threading.Lock()
        self.book = MaintenanceBook()
        self._announced_ns: dict[str, int] = {}
        #: links the TE controller reported drained by someone else, last time it was asked
        self.te_drained: set[str] = set()

    # -- questions (any thread) ----------------------------------------------------------------

    def explaining(self, alert: Alert) -> Maintenance | None:
        with self._lock:
            return self.book.explaining(alert)

    def muting(self, alert: Alert) -> Maintenance | None:
        with self._lock:
            return self.book.muting(alert)

    def open(self) -> list[Maintenance]:
        with self._lock:
            return self.book.open()

    # -- changes (the runbook thread) ----------------------------------------------------------

    def _publish(self, m: Maintenance, run: Run | None = None) -> None:
        with self._lock:
            changed = self.book.apply(m)
            if m.open:
                self._announced_ns[m.target] = m.at_ns
            else:
                self._announced_ns.pop(m.target, None)
        if changed:
            self._record(record(m, run.mode if run else "auto",
                                run.alert.fingerprint if run else "",
                                run.alert.name if run else ""))

    def on_run(self, run: Run, now_ns: int) -> None:
        """A run moved: its target's maintenance follows its phase."""
        held = self.book.get(run.target)
        if run.phase in HELD or run.phase in SOAKING:
            state: State = "held" if run.phase in HELD else "soaking"
            if held is not None and held.run == run.id:
                if held.state == state:
                    return  # a record per change of state; the run's own records tell its steps
                m = replace(held, state=state, phase=str(run.phase), at_ns=now_ns,
                            held_since_ns=now_ns if state == "held" else held.held_since_ns)
            else:
                m = Maintenance(
                    target=run.target, kind="link" if run.runbook == "drain" else "host",
                    ports=tuple(str(p) for p in run.ports), state=state,
                    origin="operator" if run.requested_by else "runbook",
                    by=run.requested_by or run.alert.name, run=run.id, since_ns=now_ns,
                    held_since_ns=now_ns, phase=str(run.phase),
                    reason=run.reason, at_ns=now_ns)
            self._publish(m, run)
        elif held is not None and held.run == run.id:
            self._publish(ended(held, now_ns, str(run.phase)), run)

    def on_te_state(self, drained: Mapping[str, Mapping[str, Any]], topology: Topology,
                    now_ns: int) -> None:
        """What the TE controller holds drained (link id → its ``drain`` object): a link
        someone else drained is held until the controller lets it go."""
        theirs = {link: info for link, info in drained.items()
                  if info.get("requested_by") != REQUESTED_BY and link in topology.link_by_id}
        self.te_drained = set(theirs)
        for link_id, info in theirs.items():
            held = self.book.get(link_id)
            if held is not None:
                continue  # ours (a run holds it) or already known
            link = topology.link_by_id[link_id]
            since = int(info.get("at_ns") or now_ns)
            self._publish(Maintenance(
                target=link_id, kind="link", ports=(str(link.a), str(link.b)), state="held",
                origin="te", by=str(info.get("requested_by") or "TE controller"), run="",
                since_ns=min(since, now_ns), held_since_ns=min(since, now_ns),
                phase="drained by the TE controller", reason=str(info.get("reason") or ""),
                at_ns=now_ns))
        for m in self.open():
            if m.origin == "te" and m.target not in theirs:
                self._publish(ended(m, now_ns, "undrained by the TE controller"))

    def restored(self, runs: Mapping[str, Run], now_ns: int) -> None:
        """After a restart: announce what the restored runs hold."""
        for run in runs.values():
            self.on_run(run, now_ns)

    def tick(self, now_ns: int) -> None:
        """Re-announce every open maintenance once it has been quiet for a while."""
        for m in self.open():
            if now_ns - self._announced_ns.get(m.target, m.at_ns) >= REPUBLISH_NS:
                with self._lock:
                    self._announced_ns[m.target] = now_ns
                self._record(record(replace(m, at_ns=now_ns)))
