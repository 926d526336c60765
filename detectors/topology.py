"""The fabric's topology kept current from LLDP, and ``topology_mismatch`` where it disagrees with
the declared one.

:class:`TopologyWatch` holds the latest neighbour report of every device (the neighbors topic,
:mod:`pipeline.wire.neighbors`), discovers the topology they describe
(:func:`pipeline.topology.discover.discover`) and compares their sightings with the declared
topology (:func:`pipeline.topology.drift.compare`). Each disagreement is one root-cause incident,
``topology_mismatch``, named by the link (a miswire that swaps several cables: by all of them,
comma-joined), labelled with what kind of mismatch it is (``miswired``, ``missing``,
``one_sided``, ``extra``), with every end involved among its ports and what each port saw in its
annotations. A miswire is critical (routing, TE and fault isolation all work from the declared
map); the others warn.

Evidence before firing: a mismatch fires once a report newer than the one that first showed it,
from a device of the mismatch, still shows it (a link that changes state between two devices'
polls is not a miswire); it resolves on the first evaluation that no longer shows it. The
evidence is counted per link, whatever the mismatch is called meanwhile: a neighbour dropped at
both ends is ``one_sided`` once the first end's report shows it and ``missing`` once the other
end's does, and that second report, newer and from the other device, is the confirmation (it
does not start the wait again: a drop shorter than two reads of one device would never fire).
Time is
event time, the reports' own. The comparison runs at most every ``every_s`` of event time (its
cost is linear in the fabric's ports), and only when some device's latest report says something
its last one did not: most reports restate the same table at a new time, and the comparison of
the same tables is the same (it reads no time).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from detectors.lifecycle import AlertBook
from pipeline.kinds import TOPOLOGY_MISMATCH
from pipeline.model import Alert, Severity
from pipeline.topology.discover import Discovery, Hints, discover, resolve
from pipeline.topology.drift import MISWIRED, Mismatch, compare
from pipeline.topology.model import Port, Topology
from pipeline.topology.neighbors import NeighborReport

#: who speaks on the alerts topic for the topology
SOURCE = "topology"


class TopologyWatch:
    def __init__(self, declared: Topology | None, every_s: float = 10.0,
                 update_every_s: float = 10.0, hints: Hints | None = None) -> None:
        self.declared = declared
        self.every_ns = int(every_s * 1e9)
        self.hints = hints or Hints()
        self.book = AlertBook(update_every_s)
        self.latest: dict[str, NeighborReport] = {}
        self.now_ns = 0
        self._judged_ns = -1
        #: mismatched link(s) -> the newest report it was first seen in (whatever its kind)
        self._first: dict[str, int] = {}
        self.mismatches: list[Mismatch] = []
        self.evaluations = 0
        #: comparisons run (an evaluation whose reports say what the last one's did reuses it)
        self.comparisons = 0
        self._changed = True  # a latest report says what the one before it did not

    def observe(self, reports: Iterable[NeighborReport]) -> list[Alert]:
        """Take reports; returns the alert state changes (firing, updated, resolved)."""
        for r in reports:
            have = self.latest.get(r.device)
            if have is None or r.ts_ns >= have.ts_ns:
                self.latest[r.device] = r
                self._changed = self._changed or have is None or _says_other(have, r)
            self.now_ns = max(self.now_ns, r.ts_ns)
        if self.declared is None or not self.latest:
            return []
        if self._judged_ns >= 0 and self.now_ns - self._judged_ns < self.every_ns:
            return []
        self._judged_ns = self.now_ns
        self.evaluations += 1
        if self._changed:
            self.mismatches = compare(self.declared, resolve(self.latest.values()))
            self.comparisons += 1
            self._changed = False
        current = []
        seen: set[str] = set()
        for m in self.mismatches:
            seen.add(m.entity)
            newest = max((self.latest[p.device].ts_ns for p in _devices(m)
                          if p.device in self.latest), default=self.now_ns)
            first = self._first.setdefault(m.entity, newest)
            if newest > first or (m.kind, m.entity) in self._firing:
                current.append(self._alert(m))
        for key in [k for k in self._first if k not in seen]:
            del self._first[key]
        changes = self.book.reconcile(current, self.now_ns)
        return changes

    @property
    def _firing(self) -> set[tuple[str, str]]:
        return {(a.labels.get("mismatch", ""), a.entity) for a in self.book.active()}

    def discovered(self) -> Discovery:
        """The topology the latest reports describe."""
        return discover(self.latest.values(), self.hints)

    def _alert(self, m: Mismatch) -> Alert:
        return Alert(
            name=TOPOLOGY_MISMATCH, entity=m.entity,
            severity=Severity.CRITICAL if m.kind == MISWIRED else Severity.WARNING,
            labels={"mismatch": m.kind},
            annotations={"summary": m.summary, "seen": "; ".join(m.seen),
                         "links": ",".join(m.links)},
            evidence={"links": float(len(m.links)), "ports": float(len(m.ports)),
                      "reports": float(len(self.latest))},
            ports=m.ports, root_cause=True, starts_ns=self.now_ns, updated_ns=self.now_ns,
            source=SOURCE)

    def health(self) -> dict[str, Any]:
        return {"devices_reporting": len(self.latest), "evaluations": self.evaluations,
                "comparisons": self.comparisons,
                "mismatches": len(self.mismatches), "now_ns": self.now_ns,
                "declared": self.declared is not None}


def _says_other(a: NeighborReport, b: NeighborReport) -> bool:
    """Whether two reports of a device differ in anything but their time."""
    return any(v != getattr(b, k) for k, v in a.__dict__.items() if k != "ts_ns")


def _devices(m: Mismatch) -> list[Port]:
    return [Port.parse(p) for p in m.ports]
