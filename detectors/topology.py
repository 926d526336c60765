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

Evidence before firing is persistence in time: a mismatch fires once the reports that show it
have shown it for ``hold_intervals`` sample intervals of event time (two by default); it resolves
on the first comparison that no longer shows it. How long a report's table holds depends on how
it was read (:attr:`~pipeline.topology.neighbors.NeighborReport.streamed`):

* a report from an ON_CHANGE stream holds until the device's next report (the stream sends every
  change as it happens), so it shows the mismatch up to the watch's event time, which the
  samples move on (:meth:`TopologyWatch.observe`'s ``now_ns``): a drop streamed at T fires at
  the first evaluation at or after T + hold, within three intervals;
* a periodic report (a Get, a ONCE subscription, an SNMP walk) is a snapshot at its time only,
  so the evidence is a later report of a device that still shows it, at least the hold after
  the first: the second LLDP read at the latest (an SNMP-only link: within two LLDP intervals).

The hold is the physics of an LLDP flap: a port that comes up shows its neighbour once the first
LLDPDU arrives, which 802.1AB's fast start sends within a second (txFast), so a link that
returns shows "up, nothing seen" for a second or so; a blip shorter than the hold, or a one-read
blip of a polled device, never pages. The evidence is counted per link, whatever the mismatch is
called meanwhile (a neighbour dropped at both ends is ``one_sided`` once the first end's report
shows it and ``missing`` once the other end's does; that does not start the wait again), and
only from the devices that show it (:attr:`~pipeline.topology.drift.Mismatch.shown_by`: a
streamed device whose table is right is no evidence for the other end's snapshot).

Time is event time, the reports' own and the samples'. The comparison runs only when some
device's latest report says something its last one did not (most periodic reports restate the
same table at a new time, and the comparison of the same tables is the same: it reads no time),
at most every ``every_s`` of event time (its cost is linear in the fabric's ports); while a
change waits for its comparison, nothing new fires (the change may be the one that clears it).
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
#: sample intervals a mismatch must hold before it fires (see the module docstring)
HOLD_INTERVALS = 2.0
#: the interval the hold is counted in before the samples say theirs
DEFAULT_INTERVAL_NS = 1_000_000_000


class TopologyWatch:
    def __init__(self, declared: Topology | None, every_s: float = 1.0,
                 update_every_s: float = 10.0, hints: Hints | None = None,
                 hold_intervals: float = HOLD_INTERVALS) -> None:
        self.declared = declared
        self.every_ns = int(every_s * 1e9)
        self.hints = hints or Hints()
        self.book = AlertBook(update_every_s)
        self.hold_intervals = hold_intervals
        #: the sample interval the hold is counted in (the samples' own, once known)
        self.interval_ns = DEFAULT_INTERVAL_NS
        self.latest: dict[str, NeighborReport] = {}
        self.now_ns = 0
        self._compared_ns = -1
        #: mismatched link(s) -> when it was first shown (its witnesses' newest report then)
        self._first: dict[str, int] = {}
        self.mismatches: list[Mismatch] = []
        self.evaluations = 0
        #: comparisons run (an evaluation whose reports say what the last one's did reuses it)
        self.comparisons = 0
        self._changed = True  # a latest report says what the one before it did not

    @property
    def hold_ns(self) -> int:
        return int(self.hold_intervals * self.interval_ns)

    def observe(self, reports: Iterable[NeighborReport], now_ns: int = 0,
                interval_ns: int = 0) -> list[Alert]:
        """Take reports, and the event time and sample interval the samples say (0: unknown);
        returns the alert state changes (firing, updated, resolved)."""
        for r in reports:
            have = self.latest.get(r.device)
            if have is None or r.ts_ns >= have.ts_ns:
                self.latest[r.device] = r
                self._changed = self._changed or have is None or _says_other(have, r)
            self.now_ns = max(self.now_ns, r.ts_ns)
        self.now_ns = max(self.now_ns, now_ns)
        if interval_ns > 0:
            self.interval_ns = interval_ns
        if self.declared is None or not self.latest:
            return []
        if self._changed and (self._compared_ns < 0
                              or self.now_ns - self._compared_ns >= self.every_ns):
            self.mismatches = compare(self.declared, resolve(self.latest.values()))
            self.comparisons += 1
            self._compared_ns = self.now_ns
            self._changed = False
            shown = {m.entity for m in self.mismatches}
            for key in [k for k in self._first if k not in shown]:
                del self._first[key]
            for m in self.mismatches:
                self._first.setdefault(m.entity, self._shown_until(m, streamed_now=False))
        self.evaluations += 1
        firing = self._firing
        current = [self._alert(m) for m in self.mismatches
                   if (m.kind, m.entity) in firing or (not self._changed and self._held(m))]
        return self.book.reconcile(current, self.now_ns)

    def _shown_until(self, m: Mismatch, streamed_now: bool = True) -> int:
        """Until when the devices that show ``m`` are known to show it: a streamed table up to
        now, a snapshot at its time."""
        until = [self.now_ns if streamed_now and r.streamed else r.ts_ns
                 for r in (self.latest.get(d) for d in _witnesses(m)) if r is not None]
        return max(until, default=self.now_ns)

    def _held(self, m: Mismatch) -> bool:
        return self._shown_until(m) - self._first[m.entity] >= self.hold_ns

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


def _witnesses(m: Mismatch) -> list[str]:
    """The devices whose reports show ``m`` (every device of its ports when it does not say)."""
    return list(m.shown_by) or sorted({Port.parse(p).device for p in m.ports})
