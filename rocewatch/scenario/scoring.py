"""Scoring a run report against the lab's ground truth, and summing scores over a suite.

The rules (``shared/scenarios/README.md``, made precise here):

* only **root-cause** alerts count (``root_cause: true`` in the alert's final state);
* an alert **matches** a truth entry when its kind is the incident kind the fault should produce
  (``link_corruption`` and ``optics_degrade`` → ``faulty_link``, ``ecmp_collision`` →
  ``ecmp_imbalance``, the rest by their own name), its entity or one of its ports names the
  target (a deadlock's entity lists the links of its cycle, comma-separated, and matches any of
  them; so does a ``topology_mismatch``'s that names a miswire of several links), and it was
  first raised while the fault was on: no earlier than one sample interval before the fault
  started (samples are stamped at interval boundaries) and no later than ``grace_intervals``
  after it ended;
* **precision** = matching root-cause alerts / root-cause alerts; **recall** = truth entries
  matched / truth entries (1.0 when there is no truth and no alert; a control run's precision is
  0.0 as soon as it raises anything);
* **time to detect** = first matching alert's ``first_s`` − the fault's ``start_s``, per truth
  entry; per kind, the slowest of the run. A link flap can only be told from a link down once the
  link comes back; the platform raises ``link_down`` first and re-publishes it as a symptom of the
  flap (``root_cause: false``) when it does. For a flap, that superseded ``link_down`` on the same
  link counts as its first detection: on-call was told which link from then on;
* **entity accuracy** = of the faults for which an alert of the right kind was raised while they
  were on, the share where one of those alerts named the right entity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.kinds import (
    FAULT_TO_INCIDENT,
    LINK_DOWN,
    LINK_FLAP,
    PFC_DEADLOCK,
    TOPOLOGY_MISMATCH,
)

GRACE_INTERVALS = 3.0
#: an incident kind the platform may raise first and re-classify later → the kind it becomes
SUPERSEDED_BY = {LINK_DOWN: LINK_FLAP}


@dataclass
class TruthResult:
    kind: str
    target: str
    start_s: float
    detected: bool
    ttd_s: float | None
    kind_seen: bool  # an alert of the right kind was raised during the fault


@dataclass
class Score:
    precision: float
    recall: float
    ttd_s: dict[str, float]
    sample_interval_s: float
    root_alerts: int
    matched_alerts: int
    truths: list[TruthResult] = field(default_factory=list)
    false_positives: list[dict[str, Any]] = field(default_factory=list)

    @property
    def entity_hits(self) -> tuple[int, int]:
        seen = [t for t in self.truths if t.kind_seen]
        return sum(t.detected for t in seen), len(seen)

    def report(self) -> dict[str, Any]:
        """The ``score`` object of the run report (exactly the README's keys)."""
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4),
                "ttd_s": {k: round(v, 3) for k, v in sorted(self.ttd_s.items())}}


def names_target(alert: Mapping[str, Any], target: str) -> bool:
    entity = str(alert.get("entity", ""))
    if target == entity or target in alert.get("ports", ()):
        return True
    # a deadlock's target is one link of its cycle, or the whole cycle comma-joined; a miswire
    # is named by every link of it, comma-joined
    return alert.get("kind") in (PFC_DEADLOCK, TOPOLOGY_MISMATCH) and bool(
        set(target.split(",")) & set(entity.split(",")))


def _during(alert: Mapping[str, Any], truth: Mapping[str, Any], interval: float,
            grace: float) -> bool:
    first = float(alert["first_s"])
    return float(truth["start_s"]) - interval <= first <= float(truth["end_s"]) + grace * interval


def score(report: Mapping[str, Any], grace_intervals: float = GRACE_INTERVALS) -> Score:
    interval = float(report.get("sample_interval_s") or 1.0)
    truths: Sequence[Mapping[str, Any]] = report.get("truth", [])
    alerts = report.get("alerts", [])
    roots = [a for a in alerts if a.get("root_cause")]
    superseded = [a for a in alerts if not a.get("root_cause") and a.get("kind") in SUPERSEDED_BY]
    matched: set[int] = set()
    results: list[TruthResult] = []
    for truth in truths:
        want = FAULT_TO_INCIDENT.get(str(truth["kind"]), str(truth["kind"]))
        same_kind = [i for i, a in enumerate(roots)
                     if a.get("kind") == want and _during(a, truth, interval, grace_intervals)]
        hits = [i for i in same_kind if names_target(roots[i], str(truth["target"]))]
        matched.update(hits)
        firsts = [float(roots[i]["first_s"]) for i in hits]
        if hits:
            firsts += [float(a["first_s"]) for a in superseded
                       if SUPERSEDED_BY[a["kind"]] == want
                       and names_target(a, str(truth["target"]))
                       and _during(a, truth, interval, grace_intervals)]
        first = min(firsts, default=None)
        delay = None if first is None else max(0.0, first - float(truth["start_s"]))
        results.append(TruthResult(str(truth["kind"]), str(truth["target"]),
                                   float(truth["start_s"]), bool(hits), delay, bool(same_kind)))
    precision = len(matched) / len(roots) if roots else 1.0
    recall = sum(r.detected for r in results) / len(results) if results else 1.0
    ttd: dict[str, float] = {}
    for r in results:
        if r.ttd_s is not None:
            ttd[r.kind] = max(ttd.get(r.kind, 0.0), r.ttd_s)
    fps = [a for i, a in enumerate(roots) if i not in matched]
    return Score(precision, recall, ttd, interval, len(roots), len(matched), results, fps)


@dataclass
class SuiteTotals:
    """Sums over many runs: micro-averaged precision and recall, TTD per kind in intervals."""

    runs: int = 0
    root_alerts: int = 0
    matched_alerts: int = 0
    truths: int = 0
    detected: int = 0
    entity_right: int = 0
    entity_judged: int = 0
    control_runs: int = 0
    control_false_positives: int = 0
    ttd_intervals: dict[str, list[float]] = field(default_factory=dict)

    def add(self, report: Mapping[str, Any], s: Score) -> None:
        self.runs += 1
        self.root_alerts += s.root_alerts
        self.matched_alerts += s.matched_alerts
        self.truths += len(s.truths)
        self.detected += sum(t.detected for t in s.truths)
        right, judged = s.entity_hits
        self.entity_right += right
        self.entity_judged += judged
        if not report.get("truth"):
            self.control_runs += 1
            self.control_false_positives += s.root_alerts
        for t in s.truths:
            if t.ttd_s is not None:
                self.ttd_intervals.setdefault(t.kind, []).append(t.ttd_s / s.sample_interval_s)

    @property
    def precision(self) -> float:
        return self.matched_alerts / self.root_alerts if self.root_alerts else 1.0

    @property
    def recall(self) -> float:
        return self.detected / self.truths if self.truths else 1.0

    @property
    def entity_accuracy(self) -> float:
        return self.entity_right / self.entity_judged if self.entity_judged else 1.0
