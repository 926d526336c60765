"""What a hold releases: receivers a storm or a deadlock starved get their usual load back.

A storm (a NIC that stopped draining) or a deadlock holds back every flow its pause tree reaches,
whatever their destination; receivers far from it lose the traffic those flows carried. A
receiver whose port the workload keeps saturated (a habitual saturation,
:mod:`detectors.rules.egress_oversubscribed`) then falls quiet, and if the hold lasts longer than
the rule's warm-up its habit is forgotten: when the hold releases and the same traffic comes back
(with what the held senders queued meanwhile), the returning saturation looks new, like an
incast, though nothing changed in what is sent to it.

So the correlator remembers the habitual saturations that ended while a hold was on (starved, not
cured), and a saturation that returns on one of those ports by :data:`RETURN_INTERVALS` sample
intervals after the hold's release is the habit coming back: it counts as habitual for as long as
it lasts. One that returns later, or on a port that was not habitual before the hold, is judged
by the rule as any other. A hold is on from the step its incident is found until its evidence says
it has let go (a storm's port drains again: :func:`~detectors.correlation.classify.storm_holds`)
or the incident is gone.
"""

from __future__ import annotations

from detectors.correlation.classify import habitual, storm_holds
from detectors.correlation.incident import Finding
from detectors.correlation.pause_graph import PauseGraph
from pipeline.kinds import EGRESS_OVERSUBSCRIBED, PFC_DEADLOCK, PFC_STORM

#: a starved receiver's saturation beginning within this many sample intervals of the step that
#: saw the hold release is the load the hold took away. The held traffic moves again at once
#: (buffers drain in micro- to milliseconds), but what is seen of it is sampled: the receiver's
#: first sample after the release may hold only part of it (a second one is its first full one:
#: two intervals), and its switch is sampled up to one interval apart from the one that showed
#: the release; counted from the release's own sample, that is at most three
RETURN_INTERVALS = 3


def holding(findings: list[Finding]) -> bool:
    """Whether any of a step's incidents holds back traffic: a storm whose port still does not
    drain, or a deadlock."""
    return any(f.kind == PFC_DEADLOCK or (f.kind == PFC_STORM and storm_holds(f.evidence))
               for f in findings)


class Aftermath:
    """The habitual saturations a hold starved, and those that came back after it."""

    def __init__(self) -> None:
        #: ports whose saturation was habitual at the last step
        self._habitual: set[str] = set()
        #: starved port → the release of the hold that starved it (0: not released yet)
        self._starved: dict[str, int] = {}
        #: whether a hold was on at the last step
        self._holding = False

    def kept(self, graph: PauseGraph, now_ns: int, interval_ns: int) -> set[str]:
        """The ports whose saturation counts as habitual this step, though the rule no longer
        says so: each a starved one that came back in time. Call before classifying a step,
        then :meth:`after` with its findings."""
        flooded = {label: [a for a in graph.symptoms.on(label) if a.name == EGRESS_OVERSUBSCRIBED]
                   for label in graph.symptoms.ports_named(EGRESS_OVERSUBSCRIBED)}
        if self._holding:
            for label in self._habitual:
                if not any(habitual(a) for a in flooded.get(label, ())):
                    self._starved[label] = 0
        self._habitual = {label for label, alerts in flooded.items()
                          if any(habitual(a) for a in alerts)}
        out: set[str] = set()
        for label, released in list(self._starved.items()):
            back = flooded.get(label)
            deadline = released + RETURN_INTERVALS * interval_ns
            if back:
                if not released or min(a.starts_ns for a in back) <= deadline:
                    out.add(label)
                    continue
            elif not released or now_ns <= deadline:
                continue
            del self._starved[label]  # gone after its return, or back too late to be the habit
        return out

    def after(self, findings: list[Finding], now_ns: int) -> None:
        """Record whether a hold is on after this step's findings (and when it released)."""
        was, self._holding = self._holding, holding(findings)
        if was and not self._holding:
            for label, released in self._starved.items():
                if not released:
                    self._starved[label] = now_ns
