"""The correlator restates symptoms (inhibited by their incident, or benign alone) by copies it
keeps: an unchanged symptom gets last step's copy, a changed one a new copy with its news."""

from __future__ import annotations

from detectors.correlation.correlator import Correlator
from pipeline.model import Alert, Severity
from pipeline.topology.model import spine_leaf

S = 1_000_000_000


def _pausing(port: str, frames: float) -> Alert:
    return Alert(name="pfc_pausing", entity=port, ports=(port,), root_cause=False,
                 evidence={"frames": frames}, labels={"port": port},
                 starts_ns=100 * S, updated_ns=101 * S)


def test_an_unchanged_symptom_is_restated_by_the_same_copy_and_a_changed_one_anew() -> None:
    corr = Correlator(spine_leaf(2, 2, 2))
    alone = _pausing("leaf1:Ethernet0", 5.0)
    (first,) = corr.correlate_at([alone], 102 * S, S)
    assert first.severity == Severity.INFO and first is not alone   # benign alone: restated
    (again,) = corr.correlate_at([alone], 103 * S, S)
    assert again is first
    news = _pausing("leaf1:Ethernet0", 9.0)
    (changed,) = corr.correlate_at([news], 104 * S, S)
    assert changed is not first and changed.evidence == {"frames": 9.0}
    assert changed.severity == Severity.INFO
    (later,) = corr.correlate_at([alone], 105 * S, S)   # the old object again: copied anew
    assert later is not first and later.evidence == {"frames": 5.0}
