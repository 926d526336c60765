"""How an :class:`~pipeline.model.Alert` looks in Alertmanager's terms: its label set (what
matchers see and receivers send), its annotations, and its times in RFC 3339.

The label set is the alert's identity (``alertname``, ``entity`` and the detector's labels), so
``fingerprint`` is exactly Alertmanager's hash of the labels a webhook is sent. Severity is not
identity (an incident may escalate without becoming a new alert): matchers still see it, with
``root_cause`` and ``entity_kind``, as extra labels (so does an Alertmanager we post to, whose
routes match on labels), and webhooks get them as annotations.
"""

from __future__ import annotations

import json

from pipeline.entities import entity_kind
from pipeline.model import Alert
from pipeline.times import format_instant
from remediation.runbooks import kinds

RUNBOOKS = kinds()

#: what Alertmanager writes for an end time that is not set (a firing alert)
ZERO_TIME = "0001-01-01T00:00:00Z"
RUNBOOK_DIR = "remediation/runbooks"


def match_labels(alert: Alert, kind: str | None = None) -> dict[str, str]:
    """The labels routes, silences and inhibit rules match on, and that an Alertmanager is sent:
    the identity, ``severity``, ``root_cause`` and ``entity_kind`` (:mod:`pipeline.entities`;
    ``kind`` when the caller knows it from the topology, else from the shared naming)."""
    return {"severity": alert.severity.value, "root_cause": str(alert.root_cause).lower(),
            "entity_kind": kind or entity_kind(alert.entity), **alert.identity}


def alert_annotations(alert: Alert) -> dict[str, str]:
    """The detector's annotations plus the facts on-call needs to act."""
    out = {
        "summary": f"{alert.name} on {alert.entity}",
        "severity": alert.severity.value,
        "root_cause": str(alert.root_cause).lower(),
        "confidence": f"{alert.confidence:.2f}",
    }
    if alert.name in RUNBOOKS:
        out["runbook"] = f"{RUNBOOK_DIR}/{alert.name}.md"
    if alert.ports:
        out["ports"] = ",".join(alert.ports)
    if alert.explains:
        out["explains"] = ",".join(alert.explains)
    if alert.inhibited_by:
        out["inhibited_by"] = alert.inhibited_by
    if alert.evidence:
        out["evidence"] = json.dumps(alert.evidence, sort_keys=True)
    out.update(alert.annotations)
    return out


def rfc3339(ns: int | None) -> str:
    """Go's RFC3339Nano in UTC (trailing zeros of the fraction trimmed); None → the zero time."""
    return ZERO_TIME if ns is None else format_instant(ns)


def status(alert: Alert, at_ns: int) -> str:
    """``firing`` or ``resolved`` as of event time ``at_ns``."""
    return "firing" if alert.ends_ns is None or alert.ends_ns > at_ns else "resolved"
