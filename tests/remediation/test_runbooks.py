"""Every alert kind has a runbook for people, with the three sections a runbook needs."""

from __future__ import annotations

import pytest

from pipeline.kinds import INCIDENT_KINDS, NO_DATA
from pipeline.model import Alert
from remediation.alerting.labels import alert_annotations
from remediation.drains.runbook import HALT_ALERT
from remediation.runbooks import DIR, kinds

#: the platform's incident kinds, the silent device, and remediation's own alert
KINDS = (*INCIDENT_KINDS, NO_DATA, HALT_ALERT)


def test_the_kinds_are_the_scenario_formats() -> None:
    # shared/scenarios/README.md's "the platform should report" column, spelled out once more
    # (the platform may raise kinds of its own beyond it: each still needs its runbook, below)
    assert set(INCIDENT_KINDS) >= {"pfc_storm", "incast", "slow_receiver", "faulty_link",
                                   "link_flap", "link_down", "ecmp_imbalance",
                                   "buffer_misconfig", "pfc_deadlock"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_has_a_runbook(kind: str) -> None:
    assert kind in kinds(), f"remediation/runbooks/{kind}.md is missing"
    text = (DIR / f"{kind}.md").read_text()
    assert text.startswith(f"# {kind} — ")
    for section in ("**What it means.**", "**What the automation does", "**What a human does.**"):
        assert section in text, f"{kind}.md lacks {section}"


def test_alerts_link_their_runbook_and_symptoms_do_not() -> None:
    incident = Alert(name="faulty_link", entity="leaf1~spine1", starts_ns=1, updated_ns=1)
    symptom = incident.model_copy(update={"name": "fcs_errors", "root_cause": False})
    assert alert_annotations(incident)["runbook"] == "remediation/runbooks/faulty_link.md"
    assert "runbook" not in alert_annotations(symptom)
