"""The detect worker of a partitioned deployment: the per-device half of the chain, and its reports.

A :class:`SymptomChain` is the one-process :class:`~detectors.chain.DetectionChain` (rates,
feature table, per-device detectors: the same code) without the fabric side: at each step it
keeps a :class:`~pipeline.wire.symptoms.SymptomReport` (the devices the step judged, every
symptom it holds active, the switches' summaries and the rows the cross-device rules read)
instead of correlating. Of the cross-device rules (:mod:`detectors.partition.rules`) only the
summing-up half of a split one runs here.
"""

from __future__ import annotations

import numpy as np

from detectors.chain import DetectionChain, build_detectors, detector_specs
from detectors.features import Frame
from detectors.partition.pause import PauseSummaries
from detectors.partition.rules import SUMMARIZED_RULES, forwarded_metrics, on_fabric_side
from detectors.settings import DetectionSettings
from pipeline.model import Alert, SampleBatch
from pipeline.topology.model import Topology
from pipeline.wire.symptoms import SymptomReport


class SymptomChain(DetectionChain):
    """The per-device detectors of one worker, reporting what they hold at each step."""

    def __init__(self, settings: DetectionSettings, topology: Topology | None,
                 worker: str) -> None:
        super().__init__(settings, topology, build_detectors(
            settings, topology, keep=lambda spec: not on_fabric_side(spec),
            swap={name: PauseSummaries for name in SUMMARIZED_RULES}))
        self._summing = [d for d in self.detectors if isinstance(d, PauseSummaries)]
        self.worker = worker
        self._forward = forwarded_metrics(detector_specs(settings))
        #: switches by name (None: no topology, every device's rows are forwarded)
        self._switches = frozenset(topology.switches) if topology is not None else None
        self._reports: list[SymptomReport] = []
        self._judged: tuple[str, ...] = ()
        self._inputs: SampleBatch | None = None
        #: rows forwarded to the fabric side so far, of all rows judged
        self.forwarded = 0

    def _observe(self, batch: SampleBatch) -> list[Alert]:
        if len(batch):
            present = np.unique(batch.device)
            self._judged = tuple(batch.devices[int(d)] for d in present.tolist())
            self._inputs = self._forwarded(batch)
        return super()._observe(batch)

    def _forwarded(self, batch: SampleBatch) -> SampleBatch | None:
        if not self._forward.size:
            return None
        keep = np.isin(batch.metric, self._forward)
        if self._switches is not None:
            switch = np.array([d in self._switches for d in batch.devices], bool)
            keep &= switch[batch.device]
        if not keep.any():
            return None
        self.forwarded += int(keep.sum())
        return batch.take(keep)

    def decide(self, symptoms: list[Alert], frame: Frame) -> list[Alert]:
        summaries = tuple(s for d in self._summing for s in d.take())
        self._reports.append(SymptomReport(self.worker, frame.now_ns, self.interval_ns,
                                           self._judged, tuple(symptoms), self._inputs,
                                           summaries))
        self._inputs = None
        return []

    def take_reports(self) -> list[SymptomReport]:
        """The reports of the steps since the last call, in order."""
        out, self._reports = self._reports, []
        return out

    def health(self) -> dict[str, object]:
        return {**super().health(), "forwarded_rows": self.forwarded}
