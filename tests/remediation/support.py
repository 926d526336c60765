"""Hand-built alerts on the remediation tests' own event time."""

from __future__ import annotations

from typing import Any

from pipeline.model import Alert, Severity

NS = 1_000_000_000
#: event time zero of the hand-built alerts (2027-01-15, far from the wall clock on purpose)
T0 = 1_800_000_000 * NS


def at(seconds: float) -> int:
    return T0 + int(seconds * NS)


def make_alert(name: str = "faulty_link", entity: str = "leaf1~spine1", start: float = 0.0,
               end: float | None = None, updated: float | None = None, **fields: Any) -> Alert:
    fields.setdefault("severity", Severity.CRITICAL)
    return Alert(name=name, entity=entity, starts_ns=at(start),
                 updated_ns=at(updated if updated is not None else (end or start)),
                 ends_ns=at(end) if end is not None else None, **fields)
