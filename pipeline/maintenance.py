"""Maintenance: a fabric link drained or a host isolated on purpose, and the one rule every stage
uses to tell what it explains.

A link the platform drains (a runbook, or a person's ``drain`` command) or the TE controller
reports drained, and a host the platform isolates, is *in maintenance*: its down state and its
lost traffic are expected, not an incident. Remediation owns the state and publishes it as
records on the actions topic (``action: maintenance``, keyed by the target, stored by ingest like
every audit record); detection, the read side and the scenario report fold the same records with
:class:`MaintenanceBook` and ask it the same question.

A record says, for one target, its ``state`` now:

* ``held``: drained or isolated (from the moment traffic is moved off until the port is enabled
  again after a repair): what happens to it is maintenance;
* ``soaking``: enabled again after a repair, on trial; errors now are real findings (a soak that
  sees them holds it again), but notifications stay muted until it is restored;
* ``ended``: restored, or the drain rolled back; it is an ordinary link or host again.

**The rule.** Maintenance explains an alert when the alert is *on* the target (its entity is the
target or one of the target's ports, or every port it names is one of the target's ports) and it
began *during* the maintenance: at or after ``held_since_ns`` while held (the consequences, such as
the drained link's ``link_down``, its ports' ``port_down``, the lost traffic's ``anomaly``); a
drained link's flows are rehashed over its siblings, so an ECMP imbalance of either end's switch
that began during the drain is its consequence too, as it is a link down's. An
alert that began before is the reason for the maintenance, not its consequence: it stays what it
was (a corruption that made us drain a link is still a root cause, and resolves on its own). An
explained alert is restated, not dropped (:func:`restate`): ``root_cause`` false, severity
``info``, and an ``maintenance`` annotation saying by whom and since when; notifications mute
alerts on the target that began since ``since_ns`` until the maintenance has ended.

Remediation re-publishes the records of every maintenance that has not ended every
:data:`REPUBLISH_NS` of event time, so a reader that starts (or restarts) late knows the fabric
within a minute.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from pipeline.errors import DecodeError
from pipeline.kinds import ECMP_IMBALANCE, UPLINK_IMBALANCE
from pipeline.model import ActionResult, Alert, Severity
from pipeline.times import format_instant

ACTION = "maintenance"
State = Literal["held", "soaking", "ended"]
Kind = Literal["link", "host"]
Origin = Literal["runbook", "operator", "te"]
STATES: tuple[State, ...] = ("held", "soaking", "ended")
#: an open maintenance is re-announced this often (event time)
REPUBLISH_NS = 60 * 1_000_000_000
#: the annotation an explained alert carries
ANNOTATION = "maintenance"
#: alerts on a switch's ECMP groups: a drained link's flows move onto its siblings at either end
REHASHED = frozenset({ECMP_IMBALANCE, UPLINK_IMBALANCE})


@dataclass(frozen=True)
class Maintenance:
    """One target's maintenance as last recorded."""

    target: str
    kind: Kind
    #: the switch ports it holds (``leaf2:Ethernet5``): both ends of a link, a host's leaf port
    ports: tuple[str, ...]
    state: State
    #: who put it there: ``runbook`` (an incident), ``operator`` (a drain command), ``te``
    origin: Origin
    #: the person, or the TE controller's ``requested_by``, or the incident (``faulty_link``)
    by: str
    #: the remediation run holding it ("" for a TE-reported drain)
    run: str
    #: when the maintenance began, and when its current held period began (event time, ns)
    since_ns: int
    held_since_ns: int
    #: the run's phase (``drained``, ``soak``...) or the TE controller's word, for people
    phase: str
    reason: str
    #: event time of this record
    at_ns: int

    @property
    def open(self) -> bool:
        return self.state != "ended"

    @property
    def id(self) -> str:
        return f"{ACTION}.{self.target}.{self.since_ns}"

    def describe(self) -> str:
        who = f"run {self.run}" if self.run else self.origin
        by = f" ({self.by})" if self.by and self.by != self.run else ""
        what = "drained" if self.kind == "link" else "isolated"
        if self.state == "soaking":
            what = "soaking after repair"
        elif self.state == "ended":
            what = "back in service"
        return (f"{self.target} {what}: maintenance by {who}{by} since "
                f"{format_instant(self.since_ns, 3)}")

    def explains(self, alert: Alert) -> bool:
        """Whether ``alert`` is this maintenance's consequence (the module's rule)."""
        return self.state == "held" and alert.starts_ns >= self.held_since_ns and \
            self.covers(alert)

    def mutes(self, alert: Alert) -> bool:
        """Whether a notification about ``alert`` is muted by this maintenance."""
        return self.open and alert.starts_ns >= self.since_ns and self.covers(alert)

    def covers(self, alert: Alert) -> bool:
        """Whether ``alert`` is on this target: its entity is the target or one of its ports,
        or every port it names is one of them."""
        if alert.entity == self.target or alert.entity in self.ports:
            return True
        if alert.name in REHASHED and alert.entity in self.devices:
            return True
        return bool(alert.ports) and set(alert.ports) <= set(self.ports)

    @property
    def devices(self) -> frozenset[str]:
        """The switches at the ends of a drained link (none for an isolated host: its leaf's
        groups up do not carry its flows any differently)."""
        if self.kind != "link":
            return frozenset()
        return frozenset(p.partition(":")[0] for p in self.ports)


def record(m: Maintenance, mode: Literal["dry_run", "approval", "auto"] = "auto",
           alert_fingerprint: str = "", alert_name: str = "") -> ActionResult:
    """The audit record that carries ``m`` on the actions topic."""
    return ActionResult(
        id=f"{m.id}.{m.state}.{m.at_ns}", action=ACTION, target=m.target,
        alert_fingerprint=alert_fingerprint, alert_name=alert_name, mode=mode,
        outcome="pending" if m.open else "done", detail=f"[{m.state}] {m.describe()}",
        steps=({ACTION: asdict(m)},), at_ns=m.at_ns)


def decode(result: ActionResult) -> Maintenance | None:
    """The maintenance a record carries (None for every other action)."""
    if result.action != ACTION:
        return None
    return from_steps(result.steps)


def from_steps(steps: Iterable[Mapping[str, Any]] | str) -> Maintenance:
    """The maintenance in a record's ``steps`` (as stored: a list, or its JSON text)."""
    if isinstance(steps, str):
        try:
            steps = json.loads(steps)
        except ValueError as exc:
            raise DecodeError(f"maintenance record: steps are not JSON: {exc}") from None
    for step in steps if isinstance(steps, list | tuple) else ():
        raw = step.get(ACTION) if isinstance(step, Mapping) else None
        if isinstance(raw, Mapping):
            try:
                m = Maintenance(**{**raw, "ports": tuple(raw["ports"])})
            except (KeyError, TypeError) as exc:
                raise DecodeError(f"maintenance record: {exc}") from None
            if m.state not in STATES:
                raise DecodeError(f"maintenance record: unknown state {m.state!r}")
            return m
    raise DecodeError("maintenance record without its maintenance step")


class MaintenanceBook:
    """Records folded into the current maintenance per target (the newest record wins; an
    older one delivered late changes nothing)."""

    def __init__(self) -> None:
        self._by_target: dict[str, Maintenance] = {}
        #: per target, the newest record taken (ended ones too, so a late start stays stale)
        self._newest: dict[str, tuple[int, int]] = {}
        #: maintenance records that could not be read (the store and ingest keep them anyway)
        self.bad = 0

    def apply(self, m: Maintenance) -> bool:
        """Take a record; True when it changed what the book holds."""
        newest = self._newest.get(m.target)
        if newest is not None and newest > (m.at_ns, m.since_ns):
            return False
        self._newest[m.target] = (m.at_ns, m.since_ns)
        held = self._by_target.get(m.target)
        if held == m:
            return False
        if m.state == "ended":
            if held is None or held.since_ns > m.since_ns:
                return False
            del self._by_target[m.target]
            return True
        self._by_target[m.target] = m
        return True

    def apply_results(self, results: Iterable[ActionResult]) -> int:
        """Take the maintenance records among audit records; how many changed the book."""
        changed = 0
        for result in results:
            if result.action != ACTION:
                continue
            try:
                m = from_steps(result.steps)
            except DecodeError:
                self.bad += 1
                continue
            changed += self.apply(m)
        return changed

    def get(self, target: str) -> Maintenance | None:
        return self._by_target.get(target)

    def open(self) -> list[Maintenance]:
        return sorted(self._by_target.values(), key=lambda m: (m.since_ns, m.target))

    def __len__(self) -> int:
        return len(self._by_target)

    def _index(self) -> dict[str, list[Maintenance]]:
        """Each target, each of its ports and each end switch of a drained link → the
        maintenance that may cover an alert keyed by it."""
        out: dict[str, list[Maintenance]] = {}
        for m in self._by_target.values():
            for key in {m.target, *m.ports, *m.devices}:
                out.setdefault(key, []).append(m)
        return out

    @staticmethod
    def _candidates(alert: Alert, index: dict[str, list[Maintenance]]) -> list[Maintenance]:
        out: list[Maintenance] = []
        for key in (alert.entity, *alert.ports):
            out.extend(m for m in index.get(key, ()) if m not in out)
        return out

    def explaining(self, alert: Alert) -> Maintenance | None:
        """The maintenance that explains ``alert`` (the module's rule), if any."""
        if not self._by_target:
            return None
        return next((m for m in self._candidates(alert, self._index()) if m.explains(alert)),
                    None)

    def muting(self, alert: Alert) -> Maintenance | None:
        if not self._by_target:
            return None
        return next((m for m in self._candidates(alert, self._index()) if m.mutes(alert)), None)

    def restate(self, alerts: Iterable[Alert]) -> list[Alert]:
        """``alerts`` with every one maintenance explains restated (:func:`restate`)."""
        if not self._by_target:
            return list(alerts)
        index = self._index()
        out = []
        for alert in alerts:
            m = next((m for m in self._candidates(alert, index) if m.explains(alert)), None)
            out.append(alert if m is None else restate(alert, m))
        return out


def restate(alert: Alert, m: Maintenance) -> Alert:
    """How an alert maintenance explains is published: not a root cause, ``info``, annotated
    with the maintenance (it explains nothing itself)."""
    return alert.model_copy(update={
        "root_cause": False, "severity": Severity.INFO, "explains": (),
        "annotations": {**alert.annotations, ANNOTATION: m.describe()}})


def ended(m: Maintenance, at_ns: int, phase: str, reason: str = "") -> Maintenance:
    """``m`` closed at ``at_ns``."""
    return replace(m, state="ended", phase=phase, reason=reason or m.reason, at_ns=at_ns)
