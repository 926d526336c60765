"""An incident in the making: a root cause, the symptoms that define it, and those it explains.

The correlator's modules (:mod:`detectors.correlation.links`,
:mod:`detectors.correlation.classify`) each propose
:class:`Finding`s; :func:`to_alert` turns one into the root-cause :class:`~pipeline.model.Alert`
(name = the incident kind, entity = the scenario-format name of what is at fault).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.model import Alert, Severity


@dataclass
class Finding:
    kind: str
    entity: str
    ports: tuple[str, ...]
    #: the symptoms whose presence makes this incident (its onset is the earliest of theirs)
    defining: list[Alert]
    severity: Severity = Severity.WARNING
    confidence: float = 1.0
    evidence: dict[str, float] = field(default_factory=dict)
    #: port labels (and device names) whose symptoms this incident explains
    explains_at: set[str] = field(default_factory=set)
    summary: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.entity)


def evidence_ns(finding: Finding, now_ns: int) -> int:
    """The event time of the newest evidence an incident stands on (not the watermark of other
    devices' samples that happened to arrive in the same step)."""
    return min(now_ns, max((a.updated_ns for a in finding.defining), default=now_ns))


def to_alert(finding: Finding, explained: list[Alert], now_ns: int) -> Alert:
    onset = min((a.starts_ns for a in finding.defining), default=now_ns)
    annotations = {"summary": finding.summary} if finding.summary else {}
    return Alert(
        name=finding.kind, entity=finding.entity, severity=finding.severity,
        annotations=annotations, evidence={k: round(v, 6) for k, v in finding.evidence.items()},
        ports=tuple(sorted(set(finding.ports))), root_cause=True,
        confidence=round(max(0.0, min(1.0, finding.confidence)), 3),
        explains=tuple(sorted({a.fingerprint for a in explained})),
        starts_ns=onset, updated_ns=evidence_ns(finding, now_ns), source="correlator",
    )
