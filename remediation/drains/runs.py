"""One runbook run: its phase in the state machine, its step log, and its audit records.

::

    confirming ──▶ (dry_run) decided
        │ ──────▶ (approval) awaiting_approval ──approve──┐   ──reject/timeout──▶ cancelled
        │ ──────▶ (auto) ─────────────────────────────────┤
        ▼ guards refuse: refused                          ▼
    te_pre ──▶ verify_traffic ──▶ disable ──▶ verify_down ──▶ te_post ──▶ drained
       (any failure before the link is down: roll back, tell TE, failed)     │ repair command
                                                                              ▼
                      restored ◀── te_restore ◀── soak ◀── enable ◀──────────┘
                                          (errors during soak: disable again, back to drained)

A host isolation has no TE or traffic phases. Every transition appends a step and yields an
:class:`~pipeline.model.ActionResult` carrying the whole step log so far; the last record of a run
tells its story alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pipeline.kinds import RUNBOOK_ACTIONS
from pipeline.model import ActionOutcome, ActionResult, Alert
from pipeline.topology.model import Port
from remediation.drains.guards import Proposal, Runbook
from remediation.settings import Mode


class Phase(StrEnum):
    CONFIRMING = "confirming"
    AWAITING_APPROVAL = "awaiting_approval"
    TE_PRE = "te_pre"
    VERIFY_TRAFFIC = "verify_traffic"
    DISABLE = "disable"
    VERIFY_DOWN = "verify_down"
    TE_POST = "te_post"
    DRAINED = "drained"
    ENABLE = "enable"
    SOAK = "soak"
    TE_RESTORE = "te_restore"
    RESTORED = "restored"
    DECIDED = "decided"
    REFUSED = "refused"
    CANCELLED = "cancelled"
    FAILED = "failed"


TERMINAL = frozenset({Phase.RESTORED, Phase.DECIDED, Phase.REFUSED, Phase.CANCELLED,
                      Phase.FAILED})
#: phases in which the run touches or holds the fabric (one at a time; the link is unavailable)
TOUCHING = frozenset({Phase.TE_PRE, Phase.VERIFY_TRAFFIC, Phase.DISABLE, Phase.VERIFY_DOWN,
                      Phase.TE_POST, Phase.ENABLE, Phase.SOAK, Phase.TE_RESTORE})
HOLDING = TOUCHING | {Phase.DRAINED}
#: the audit action names: before and after the repair
ACTIONS: Mapping[str, tuple[str, str]] = RUNBOOK_ACTIONS
AFTER_REPAIR = frozenset({Phase.ENABLE, Phase.SOAK, Phase.TE_RESTORE, Phase.RESTORED})
#: steps that belong to the undo (undrain / restore) even when they end back in ``drained``
AFTER_STEPS = frozenset({"repair", "enable", "soak", "te_restore"})


def run_id(proposal: Proposal, attempt: int = 1) -> str:
    """Deterministic per incident episode and attempt: a replayed incident makes the same run."""
    text = (f"{proposal.runbook}\0{proposal.target}\0{proposal.alert.fingerprint}\0"
            f"{proposal.alert.starts_ns}\0{attempt}")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Run:
    id: str
    runbook: Runbook
    target: str
    ports: tuple[Port, ...]
    alert: Alert
    mode: Mode
    phase: Phase
    since_ns: int
    created_ns: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0
    #: verify_traffic: consecutive samples at or under the residual threshold, and the event
    #: time of the last sample counted (each sample counts once, however often we look)
    quiet_samples: int = 0
    checked_ns: int = 0
    te_told: bool = False
    disabled: list[Port] = field(default_factory=list)
    tries: int = 0
    #: the run started acting (or, in dry-run, decided): it counts for rate limit and cool-down
    acted: bool = False
    attempt: int = 1
    repair: str = ""
    soak_errors: float = 0.0
    soak_samples: dict[str, int] = field(default_factory=dict)
    #: the person whose ``drain`` command started it ("" for an incident's run)
    requested_by: str = ""

    @classmethod
    def start(cls, proposal: Proposal, mode: Mode, now_ns: int, attempt: int = 1) -> Run:
        return cls(run_id(proposal, attempt), proposal.runbook, proposal.target, proposal.ports,
                   proposal.alert, mode, Phase.CONFIRMING, now_ns, now_ns, attempt=attempt,
                   requested_by=proposal.requested_by)

    @property
    def proposal(self) -> Proposal:
        return Proposal(self.runbook, self.target, self.ports, self.alert, self.requested_by)

    @property
    def reason(self) -> str:
        """Why the run holds its target, in a few words."""
        if self.requested_by:
            return (f"requested by {self.requested_by}: "
                    f"{self.alert.annotations.get('summary', '')}").rstrip(": ")
        return f"{self.alert.name} on {self.alert.entity}"

    @property
    def done(self) -> bool:
        return self.phase in TERMINAL

    @property
    def action(self) -> str:
        return self.action_for("")

    def action_for(self, step: str) -> str:
        """``drain``/``isolate`` up to the hold; ``undrain``/``restore`` from the repair on."""
        before, after = ACTIONS[self.runbook]
        return after if (self.phase in AFTER_REPAIR or self.repair or step in AFTER_STEPS) \
            else before

    def step(self, name: str, outcome: str, detail: str, now_ns: int,
             **extra: Any) -> None:
        self.steps.append({"run": self.id, "step": name, "outcome": outcome, "detail": detail,
                           "at_ns": now_ns, **extra})

    def move(self, phase: Phase, now_ns: int) -> None:
        self.phase = phase
        self.since_ns = now_ns
        self.tries = 0

    def record(self, outcome: ActionOutcome, detail: str, now_ns: int,
               action: str = "") -> ActionResult:
        self.seq += 1
        return ActionResult(
            id=f"{self.id}.{self.seq}", action=action or self.action, target=self.target,
            alert_fingerprint=self.alert.fingerprint, alert_name=self.alert.name,
            mode=self.mode, outcome=outcome, detail=f"[{self.phase}] {detail}"[:2000],
            steps=tuple(self.steps), at_ns=now_ns)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "runbook": self.runbook, "target": self.target,
                "ports": [str(p) for p in self.ports], "alert": self.alert.model_dump(),
                "mode": self.mode, "phase": self.phase.value, "since_ns": self.since_ns,
                "created_ns": self.created_ns, "steps": self.steps, "seq": self.seq,
                "te_told": self.te_told, "disabled": [str(p) for p in self.disabled],
                "repair": self.repair, "acted": self.acted, "attempt": self.attempt,
                "requested_by": self.requested_by}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        return cls(data["id"], data["runbook"], data["target"],
                   tuple(Port.parse(p) for p in data["ports"]),
                   Alert.model_validate(data["alert"]), data["mode"], Phase(data["phase"]),
                   int(data["since_ns"]), int(data["created_ns"]), list(data["steps"]),
                   int(data["seq"]), te_told=bool(data["te_told"]),
                   disabled=[Port.parse(p) for p in data["disabled"]],
                   repair=str(data.get("repair", "")), acted=bool(data.get("acted")),
                   attempt=int(data.get("attempt", 1)),
                   requested_by=str(data.get("requested_by", "")))
