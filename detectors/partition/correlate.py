"""The fabric-wide correlator of a partitioned deployment: the workers' reports → alert changes.

It keeps, per worker, the symptoms of its latest report, and per device its *owner*: the worker
whose report judged it last. A device moved to another worker by a rebalance is reported by its
new owner from that owner's first step on; what the old owner still holds about it (its detectors
go on remembering, or find it silent) no longer counts. A worker not heard from for
``expire_intervals`` sample intervals of event time is gone, and its symptoms with it.

Each step correlates the union of what every worker's owned devices show, plus the symptoms of the
cross-device rules, which run here on the rows the workers forward (:class:`FabricRules`) or on
their summaries of the switches (:class:`~detectors.partition.pause.PauseJudge`; see
:mod:`detectors.partition.rules`), through the same :class:`~detectors.fabric.FabricChain` as one
process. Event time is the newest of the reports; the sample interval the median of the
workers' latest.

A correlator that starts (or takes over from a dead one) first waits ``warmup_intervals`` of
event time, taking reports without stepping: a step on a part of the fabric would correlate half
a storm. Its alert book may start from what an earlier correlator published
(``fabric.book.resume``, :mod:`detectors.partition.service`): its first step then publishes only
what changed since, under the same fingerprints.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from detectors.chain import DetectionChain, build_detectors
from detectors.fabric import FabricChain
from detectors.features import Frame
from detectors.partition.pause import PauseJudge
from detectors.partition.rules import SUMMARIZED_RULES, on_fabric_side, summarized
from detectors.settings import DetectionSettings
from pipeline.model import Alert, SampleBatch
from pipeline.topology.model import Topology
from pipeline.wire.symptoms import DeviceSummary, SymptomReport


class FabricRules(DetectionChain):
    """The cross-device rules on the forwarded rows: their symptoms, not correlated here."""

    def __init__(self, settings: DetectionSettings, topology: Topology | None) -> None:
        super().__init__(settings, topology, build_detectors(settings, topology,
                                                             keep=on_fabric_side))
        self.latest: list[Alert] = []

    def decide(self, symptoms: list[Alert], frame: Frame) -> list[Alert]:
        self.latest = symptoms
        return []


@dataclass
class CorrelatorStats:
    reports: int = 0
    steps: int = 0
    workers: int = 0
    devices: int = 0
    #: devices that changed owner (a rebalance moved them)
    moved: int = 0
    symptoms: int = 0
    incidents: int = 0


class PartitionedCorrelator:
    def __init__(self, settings: DetectionSettings, topology: Topology | None) -> None:
        self.settings = settings
        self.fabric = FabricChain(settings, topology)
        self.rules = FabricRules(settings, topology)
        self.judges = [d for d in build_detectors(settings, topology, keep=summarized,
                                                  swap={n: PauseJudge for n in SUMMARIZED_RULES})
                       if isinstance(d, PauseJudge)]
        self._judged: list[Alert] = []
        self.held: dict[str, tuple[Alert, ...]] = {}
        self.heard_ns: dict[str, int] = {}
        self.interval_ns: dict[str, int] = {}
        self.owner: dict[str, str] = {}
        self.now_ns = 0
        self._first_ns: int | None = None
        self.warm = False
        self.stats = CorrelatorStats()

    def take(self, reports: Iterable[SymptomReport]) -> None:
        """Reports, in the order read (a worker's own are in order: one key per worker)."""
        inputs: list[SampleBatch] = []
        summaries: list[DeviceSummary] = []
        for r in reports:
            self.stats.reports += 1
            self.held[r.worker] = r.symptoms
            self.heard_ns[r.worker] = max(self.heard_ns.get(r.worker, 0), r.now_ns)
            if r.interval_ns:
                self.interval_ns[r.worker] = r.interval_ns
            for device in r.judged:
                before = self.owner.get(device)
                if before != r.worker:
                    self.stats.moved += before is not None
                    self.owner[device] = r.worker
            self.now_ns = max(self.now_ns, r.now_ns)
            if self._first_ns is None:
                self._first_ns = r.now_ns
            if r.inputs is not None and len(r.inputs):
                inputs.append(r.inputs)
            summaries.extend(r.summaries)
        if inputs:
            self.rules.observe(inputs)
        if summaries:
            summaries.sort(key=lambda s: s.ts_ns)
            self._judged = [a for j in self.judges for a in j.judge(
                [s for s in summaries if s.rule == j.instance])]
        self._expire()

    def interval(self) -> int:
        """The fabric's sample interval: the median of the workers' latest (0 before any)."""
        known = [v for w, v in self.interval_ns.items() if w in self.held]
        return int(statistics.median(known)) if known else 0

    def _expire(self) -> None:
        limit = self.settings.partition.expire_intervals * self.interval()
        if not limit:
            return
        for worker in [w for w, t in self.heard_ns.items() if self.now_ns - t > limit]:
            self.held.pop(worker, None)
            self.heard_ns.pop(worker, None)
            self.interval_ns.pop(worker, None)
            for device in [d for d, w in self.owner.items() if w == worker]:
                del self.owner[device]

    def symptoms(self) -> list[Alert]:
        """What every worker's owned devices show now, and the cross-device rules' symptoms."""
        out: list[Alert] = []
        for worker, held in self.held.items():
            for a in held:
                device = a.labels.get("device", a.entity)
                if self.owner.get(device, worker) == worker:
                    out.append(a)
        out.extend(self.rules.latest)
        out.extend(self._judged)
        return out

    def ready(self) -> bool:
        """Whether the warm-up is over (then for good)."""
        if not self.warm and self._first_ns is not None:
            wait = self.settings.partition.warmup_intervals * self.interval()
            self.warm = not self.settings.partition.warmup_intervals or (
                self.interval() > 0 and self.now_ns - self._first_ns >= wait)
        return self.warm

    def step(self) -> list[Alert]:
        """The alert state changes of the fabric now ([] while warming up)."""
        if not self.ready():
            return []
        symptoms = self.symptoms()
        changes = self.fabric.decide(symptoms, self.now_ns, self.interval())
        s = self.stats
        s.steps += 1
        s.symptoms, s.incidents = len(symptoms), self.fabric.incidents
        s.workers, s.devices = len(self.held), len(self.owner)
        return changes

    def health(self) -> dict[str, object]:
        return {"now_ns": self.now_ns, "warm": self.warm, "correlator": self.stats.__dict__.copy(),
                "alerts": dict(self.fabric.book.counts),
                "owners": {w: sum(1 for o in self.owner.values() if o == w) for w in self.held}}
