"""The guards in front of every runbook: each either passes (with the numbers it saw, for the
audit trail) or raises :class:`~pipeline.errors.GuardRefused` naming itself and why.

The order is cheapest and most global first: the stop-automation latch, the incident itself, the
target's shape, one action at a time, the hourly rate limit, the cool-downs; then, for a link
drain, the fabric invariants tier by tier (:mod:`remediation.drains.invariants`: connectivity,
CorrOpt capacity floors per switch and per zone, blast radius); for a host isolation, the cap on
isolated hosts. A fabric link is never drained for a host problem: which runbook an incident kind
gets is fixed (:data:`RUNBOOK_FOR`), and the target must be a link or a host accordingly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.errors import GuardRefused
from pipeline.kinds import FAULTY_LINK, LINK_FLAP, PFC_STORM
from pipeline.model import Alert, Severity
from pipeline.topology.model import Link, Port, Topology
from remediation.drains.invariants import GUARDS, FabricInvariants
from remediation.settings import GuardSettings

Runbook = Literal["drain", "isolate"]
#: guards whose refusal may lift while the incident still fires (the proposal is retried)
TRANSIENT = frozenset({"one_at_a_time", "rate_limit", "cooldown", "halted"}) | GUARDS
#: incident kind → runbook; every other kind is notify-only
RUNBOOK_FOR: dict[str, Runbook] = {FAULTY_LINK: "drain", LINK_FLAP: "drain", PFC_STORM: "isolate"}
#: the name a person's drain request goes by in a run's records
REQUEST = "drain_request"
NS = 1_000_000_000
HOUR_NS = 3600 * NS


@dataclass(frozen=True)
class Proposal:
    runbook: Runbook
    target: str
    ports: tuple[Port, ...]
    #: the incident that calls for it; for a person's request, the request itself (never
    #: published: see :func:`requested`)
    alert: Alert
    #: who asked, when a person did (a ``drain`` command); "" for an incident's proposal
    requested_by: str = ""


@dataclass
class FabricState:
    """What the guards need to know about the fabric and about our own recent actions."""

    #: links we have drained or are draining (unavailable to traffic)
    drained: set[str] = field(default_factory=set)
    #: links down for other reasons (telemetry: oper or admin status down at either end)
    down: set[str] = field(default_factory=set)
    isolated_hosts: set[str] = field(default_factory=set)
    #: target of the run now touching the fabric, if any
    busy: str | None = None
    #: event times when actions (including dry-run decisions) were started
    started_ns: list[int] = field(default_factory=list)
    last_finished_ns: int | None = None
    target_finished_ns: dict[str, int] = field(default_factory=dict)
    halted: str | None = None


def propose(alert: Alert, topology: Topology) -> Proposal | None:
    """The runbook an incident calls for, or None (notify only, or an entity we cannot act on)."""
    runbook = RUNBOOK_FOR.get(alert.name)
    if runbook == "drain":
        link = topology.link_by_id.get(alert.entity)
        return Proposal("drain", alert.entity, link.ends(), alert) if link else None
    if runbook == "isolate":
        host = topology.host_by_name.get(alert.entity)
        return Proposal("isolate", alert.entity, (host.port,), alert) if host else None
    return None


def requested(target: str, by: str, comment: str, topology: Topology,
              now_ns: int) -> Proposal | None:
    """A person's ``drain`` command as a proposal: a fabric link is drained, a host isolated
    (None: the target is neither). Its ``alert`` stands for the request (:data:`REQUEST`, never
    published), so the run's records say what was asked, by whom, and when."""
    request = Alert(name=REQUEST, entity=target, severity=Severity.INFO, root_cause=False,
                    annotations={"summary": comment or f"drain requested by {by}",
                                 "requested_by": by},
                    starts_ns=now_ns, updated_ns=now_ns, source="operator")
    link = topology.link_by_id.get(target)
    if link is not None:
        return Proposal("drain", target, link.ends(), request, requested_by=by)
    host = topology.host_by_name.get(target)
    if host is not None:
        return Proposal("isolate", target, (host.port,), request, requested_by=by)
    return None


class Guards:
    def __init__(self, settings: GuardSettings, topology: Topology) -> None:
        self.s = settings
        self.topology = topology
        self.invariants = FabricInvariants(settings, topology)

    # -- the checks ----------------------------------------------------------------------------

    def check(self, proposal: Proposal, state: FabricState, now_ns: int,
              approved: bool = False, passed: list[dict[str, Any]] | None = None,
              ) -> list[dict[str, Any]]:
        """Run every guard; the passed ones as audit steps (also appended to ``passed`` as they
        pass, so a refusal still shows what was checked). Raises GuardRefused on the first no."""
        passed = [] if passed is None else passed

        def ok(guard: str, detail: str) -> None:
            passed.append({"step": "guard", "guard": guard, "outcome": "done", "detail": detail})

        s = self.s
        if state.halted:
            raise GuardRefused("halted", f"automation is stopped ({state.halted}); "
                               "a person must send a resume command")
        ok("halted", "automation is running")
        alert = proposal.alert
        if proposal.requested_by:
            ok("incident", f"requested by {proposal.requested_by}")
        elif not alert.root_cause or not alert.firing:
            raise GuardRefused("incident", "only a firing root-cause incident may start a runbook")
        elif alert.confidence < s.min_confidence:
            raise GuardRefused("incident", f"confidence {alert.confidence:.2f} is below "
                               f"{s.min_confidence:.2f}")
        else:
            ok("incident", f"{alert.name} on {alert.entity}, confidence {alert.confidence:.2f}")
        self._target_shape(proposal)
        ok("target", f"{proposal.runbook} {proposal.target} on "
           f"{', '.join(map(str, proposal.ports))}")
        if state.busy and state.busy != proposal.target:
            raise GuardRefused("one_at_a_time", f"a runbook on {state.busy} is in progress")
        ok("one_at_a_time", "no other runbook is touching the fabric")
        recent = [t for t in state.started_ns if now_ns - t < HOUR_NS]
        if len(recent) >= s.max_actions_per_hour and not approved:
            raise GuardRefused("rate_limit", f"{len(recent)} actions in the last hour "
                               f"(limit {s.max_actions_per_hour})")
        ok("rate_limit", f"{len(recent)} of {s.max_actions_per_hour} actions in the last hour")
        if state.last_finished_ns is not None and not approved:
            left = state.last_finished_ns + int(s.cooldown * NS) - now_ns
            if left > 0:
                ago = (now_ns - state.last_finished_ns) / NS
                raise GuardRefused("cooldown", f"the last action finished {ago:.0f}s ago; "
                                   f"cool-down is {s.cooldown:.0f}s")
        last = state.target_finished_ns.get(proposal.target)
        if last is not None:
            left = last + int(s.target_cooldown * NS) - now_ns
            if left > 0:
                raise GuardRefused("cooldown", f"{proposal.target} was acted on "
                                   f"{(now_ns - last) / NS:.0f}s ago; its cool-down is "
                                   f"{s.target_cooldown:.0f}s")
        ok("cooldown", "outside every cool-down")
        if proposal.runbook == "drain":
            self.invariants.check(proposal.target, state.drained, state.down, passed)
        else:
            if len(state.isolated_hosts - {proposal.target}) >= s.max_isolated_hosts:
                raise GuardRefused("blast_radius", f"{len(state.isolated_hosts)} host(s) already "
                                   f"isolated (limit {s.max_isolated_hosts})")
            ok("blast_radius", f"{len(state.isolated_hosts)} of {s.max_isolated_hosts} hosts "
               "isolated")
        return passed

    def _target_shape(self, proposal: Proposal) -> None:
        if proposal.runbook == "drain":
            link = self.topology.link_by_id.get(proposal.target)
            if link is None:
                raise GuardRefused("target", f"{proposal.target} is not a fabric link")
            if set(proposal.ports) != set(link.ends()):
                raise GuardRefused("target", f"ports {proposal.ports} are not both ends of "
                                   f"{proposal.target}")
            return
        host = self.topology.host_by_name.get(proposal.target)
        if host is None or proposal.ports != (host.port,):
            raise GuardRefused("target", f"{proposal.target} is not a host on a leaf port")
        if self.topology.attachment(host.port) != host:
            raise GuardRefused("target", f"{host.port} is not {proposal.target}'s host port")

    def links_of_ports(self, ports: Sequence[Port]) -> set[str]:
        """Fabric links with an end among ``ports`` (down ports → down links)."""
        out = set()
        for port in ports:
            link = self.topology.attachment(port)
            if isinstance(link, Link):
                out.add(link.id)
        return out

