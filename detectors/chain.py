"""The detection chain: batches → rates → feature table → detectors → correlator → alert book.

One object holds all detection state, so the live engine (:mod:`detectors.loop`), the benchmark
and ``rocewatch replay`` run exactly the same code. Time advances with the samples: the chain's
``now`` is the newest event time it has seen (the event-time watermark), never a wall clock.

Each step has two halves: :meth:`DetectionChain.judge` (the per-device detectors on the frame:
the symptoms) and :meth:`DetectionChain.decide` (the fabric side, :class:`detectors.fabric.
FabricChain`: correlate, restate, reconcile). A partitioned deployment splits the chain there
(:mod:`detectors.partition`): its workers override ``decide`` to publish the symptoms instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detectors.base import Detector
from detectors.correlation.correlator import Correlator, sample_interval_ns
from detectors.fabric import FabricChain
from detectors.features import FeatureTable, Frame, col
from detectors.lifecycle import AlertBook
from detectors.ports import PortIndex
from detectors.series import SeriesIndex
from detectors.settings import DetectionSettings
from pipeline.config import PluginSpec
from pipeline.maintenance import MaintenanceBook
from pipeline.model import Alert, SampleBatch
from pipeline.rates.state import RateState
from pipeline.registry import Registry
from pipeline.topology.model import Topology

#: rows of a wave turned into rates at a time: small enough that the rate rule's temporaries stay
#: in cache, large enough that numpy's per-call overhead is noise
CHUNK_ROWS = 1 << 16


def detector_specs(settings: DetectionSettings) -> tuple[PluginSpec, ...]:
    """The configured detectors; every registered one with defaults when none are."""
    registry: Registry[Detector] = Registry("rocewatch.detectors")
    return settings.detectors or tuple(PluginSpec(type=name) for name in registry.names())


def build_detectors(settings: DetectionSettings, topology: Topology | None,
                    keep: Callable[[PluginSpec], bool] | None = None,
                    swap: Mapping[str, type[Detector]] | None = None) -> list[Detector]:
    """The configured detector instances (those ``keep`` takes, when given); a plugin named in
    ``swap`` is built as that class instead, with the plugin's own options."""
    registry: Registry[Detector] = Registry("rocewatch.detectors")
    out: list[Detector] = []
    for i, spec in enumerate(detector_specs(settings)):
        where = f"detection.detectors[{i}]"
        if keep is not None and not keep(spec):
            continue
        cls = (swap or {}).get(spec.type)
        out.append(registry.build(spec, where, topology=topology) if cls is None else
                   cls(spec.instance, registry.options(spec, where), topology=topology))
    return out


def by_time(batch: SampleBatch) -> list[SampleBatch]:
    """A batch holding several sample times (history read back, a collector's backlog) as one
    batch per time."""
    first = batch.ts_ns[0]
    if (batch.ts_ns == first).all():
        return [batch]
    times, inverse = np.unique(batch.ts_ns, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(times) + 1))
    return [batch.take(order[bounds[i]:bounds[i + 1]]) for i in range(len(times))]


def waves(batches: Iterable[SampleBatch]) -> list[list[SampleBatch]]:
    """Split batches (sorted by event time) so that no device appears at two times in one wave."""
    ordered = sorted((part for b in batches if len(b) for part in by_time(b)),
                     key=lambda b: int(b.ts_ns[0]))
    out: list[list[SampleBatch]] = []
    wave: list[SampleBatch] = []
    seen: dict[str, int] = {}
    for b in ordered:
        ts = int(b.ts_ns[0])
        if any(seen.get(d, ts) != ts for d in b.devices):
            out.append(wave)
            wave, seen = [], {}
        wave.append(b)
        for d in b.devices:
            seen[d] = ts
    if wave:
        out.append(wave)
    return out


def _rows(batch: SampleBatch, part: slice) -> SampleBatch:
    """A run of a batch's rows, as views (no copy)."""
    if part.start == 0 and part.stop >= len(batch):
        return batch
    return SampleBatch(batch.ts_ns[part], batch.device[part], batch.port[part],
                       batch.metric[part], batch.qual[part], batch.value[part],
                       batch.flags[part], batch.devices, batch.ports)


@dataclass
class ChainStats:
    batches: int = 0
    samples: int = 0
    steps: int = 0
    symptoms: int = 0
    incidents: int = 0


class DetectionChain:
    def __init__(self, settings: DetectionSettings, topology: Topology | None,
                 detectors: list[Detector] | None = None) -> None:
        self.settings = settings
        self.topology = topology
        self.names = SeriesIndex()
        self.ports = PortIndex(self.names, topology)
        self.rates = RateState()
        self.table = FeatureTable()
        self.detectors = detectors if detectors is not None else build_detectors(settings,
                                                                                 topology)
        #: the fabric side of each step (correlator, maintenance, alert book)
        self.fabric = FabricChain(settings, topology)
        self.now_ns = 0
        #: the typical time between a port's samples, as of the last step (0 before any rate)
        self.interval_ns = 0
        self.stats = ChainStats()

    def observe(self, batches: Iterable[SampleBatch]) -> list[Alert]:
        """Feed batches; returns the alert state changes (firing, updated, resolved).

        Batches are taken in event-time order, one sample time per device per step: a consumer
        that fell behind and receives many intervals at once still has every interval judged,
        in order, exactly as if it had kept up."""
        out: list[Alert] = []
        for wave in waves(batches):
            out.extend(self._observe(SampleBatch.concat(wave)))
        return out

    def _observe(self, batch: SampleBatch) -> list[Alert]:
        if not len(batch):
            return []
        self.stats.batches += 1
        self.stats.samples += len(batch)
        ids = self.names.ids(batch)
        self.ports.sync()
        touched = self._rates(batch, ids.series, ids.port)
        speed = col("if_speed")
        has_speed = touched[self.table.ts[touched, speed] >= 0]
        if has_speed.size:
            self.ports.set_speed(has_speed, self.table.value[has_speed, speed])
        return self.step(Frame(self.table, self.ports, touched, self.now_ns))

    def _rates(self, batch: SampleBatch, series: NDArray[np.int64],
               port: NDArray[np.int64]) -> NDArray[np.int64]:
        """Rates into the feature table, :data:`CHUNK_ROWS` rows at a time; returns the ports that
        got news. A wave holds each series at one sample time, so its rows are independent and
        any split gives the same state; a chunk keeps every temporary of the rate rule in cache
        (the whole 80 k-port wave's would be gigabytes: per-sample cost would grow with it)."""
        n = len(batch)
        parts: list[NDArray[np.int64]] = []
        for lo in range(0, n, CHUNK_ROWS):
            part = slice(lo, min(lo + CHUNK_ROWS, n))
            rates = self.rates.update(_rows(batch, part), series[part], port[part])
            parts.append(self.table.apply(rates))
            if len(rates):
                self.now_ns = max(self.now_ns, int(rates.ts_ns.max()))
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts))

    @property
    def correlator(self) -> Correlator:
        return self.fabric.correlator

    @property
    def book(self) -> AlertBook:
        return self.fabric.book

    @property
    def maintenance(self) -> MaintenanceBook:
        return self.fabric.maintenance

    def step(self, frame: Frame) -> list[Alert]:
        self.stats.steps += 1
        self.interval_ns = sample_interval_ns(frame)
        symptoms = self.judge(frame)
        self.stats.symptoms = len(symptoms)
        return self.decide(symptoms, frame)

    def judge(self, frame: Frame) -> list[Alert]:
        """Every detector on the frame: the symptoms active now."""
        symptoms: list[Alert] = []
        for detector in self.detectors:
            symptoms.extend(detector.observe(frame, frame.now_ns))
        return symptoms

    def decide(self, symptoms: list[Alert], frame: Frame) -> list[Alert]:
        """The fabric side of the step: the alert state changes to publish."""
        changes = self.fabric.decide(symptoms, frame.now_ns, self.interval_ns)
        self.stats.incidents = self.fabric.incidents
        return changes

    def health(self) -> dict[str, Any]:
        return {"now_ns": self.now_ns, "chain": self.stats.__dict__.copy(),
                "rates": self.rates.stats.__dict__.copy(),
                "alerts": dict(self.book.counts), "ports": self.names.n_ports,
                "maintenance": len(self.maintenance),
                "series": self.names.n_series}
