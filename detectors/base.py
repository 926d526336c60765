"""The detector contract, and the evidence/hysteresis machinery every rule shares.

A detector is a plugin (entry-point group ``rocewatch.detectors``) with ``name``, an ``Options``
model (unknown keys forbidden) and ``__init__(instance, options, *, topology)``. Its
``observe(frame, now_ns)`` is pure: it reads the frame (:mod:`detectors.features`), updates its own
state, and returns the symptoms it holds active now. It does no I/O and reads no clock: every time
it knows is an event time from the samples.

:class:`Persistence` is the shared state machine, vectorised over keys (a port, or a port and a
priority): a key fires after ``fire_after`` consecutive bad evaluations, clears after
``clear_after`` consecutive good ones, and an evaluation that cannot be made (missing or stale
data) changes nothing — "no data" is never read as "healthy". An evaluation that was made and is
neither bad nor good (a value inside a rule's hysteresis band) breaks both runs: two bad samples
half a minute apart are not two consecutive ones, and evidence must not wait across an episode
for the next one to complete it. :class:`Symptoms` holds the active alerts of one detector by key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from math import isfinite
from typing import ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from detectors.features import Frame
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology


class DetectorOptions(BaseModel):
    """Options every rule has: evidence before firing and hysteresis before resolving."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fire_after: int = Field(2, ge=1, description="consecutive bad samples before firing")
    clear_after: int = Field(3, ge=1, description="consecutive good samples before resolving")


class Detector(ABC):
    """Base of every detector plugin."""

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = DetectorOptions

    def __init__(self, instance: str, options: BaseModel, *, topology: Topology | None) -> None:
        self.instance = instance
        self.options = options
        self.topology = topology

    @abstractmethod
    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        """Advance on the frame's news; return the symptoms active now."""


S = TypeVar("S", bound=np.generic)


def grown(arr: NDArray[S], n: int, fill: float) -> NDArray[S]:
    """``arr`` with at least ``n`` rows, the new ones ``fill`` (and some to spare): per-port state
    that follows the port index, which only grows."""
    have = arr.shape[0]
    if n <= have:
        return arr
    pad = np.full((n - have + 64, *arr.shape[1:]), fill, dtype=arr.dtype)
    out: NDArray[S] = np.concatenate([arr, pad])
    return out


class Persistence:
    """Fire after K consecutive bad evaluations, clear after M consecutive good ones."""

    def __init__(self, fire_after: int, clear_after: int) -> None:
        self.fire_after = fire_after
        self.clear_after = clear_after
        self.bad_run = np.zeros(0, np.int32)
        self.good_run = np.zeros(0, np.int32)
        self.firing = np.zeros(0, bool)
        self.onset_ns = np.zeros(0, np.int64)

    def _grow(self, n: int) -> None:
        have = self.firing.shape[0]
        if n <= have:
            return
        extra = max(n - have, have // 2, 64)
        self.bad_run = np.concatenate([self.bad_run, np.zeros(extra, np.int32)])
        self.good_run = np.concatenate([self.good_run, np.zeros(extra, np.int32)])
        self.firing = np.concatenate([self.firing, np.zeros(extra, bool)])
        self.onset_ns = np.concatenate([self.onset_ns, np.zeros(extra, np.int64)])

    def step(self, keys: NDArray[np.int64], bad: NDArray[np.bool_], good: NDArray[np.bool_],
             ts_ns: NDArray[np.int64], fire_after: NDArray[np.int64] | None = None,
             known: NDArray[np.bool_] | None = None,
             ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """One evaluation per key: bad, good, or neither; ``known`` says which evaluations were
        made (default: the bad and good ones; a made one that is neither breaks both runs).
        Returns (fired, cleared) keys.

        ``fire_after`` may lower the evidence needed per key (a stronger single observation).
        """
        if keys.size == 0:
            e = np.empty(0, np.int64)
            return e, e
        self._grow(int(keys.max()) + 1)
        bad = bad & ~good
        made = bad | good if known is None else np.asarray(known, bool) | bad | good
        self.bad_run[keys] = np.where(bad, self.bad_run[keys] + 1, np.where(made, 0,
                                                                            self.bad_run[keys]))
        self.good_run[keys] = np.where(good, self.good_run[keys] + 1,
                                       np.where(made, 0, self.good_run[keys]))
        started = bad & (self.bad_run[keys] == 1)
        self.onset_ns[keys[started]] = ts_ns[started]
        need = self.fire_after if fire_after is None else fire_after
        was = self.firing[keys]
        fire = ~was & bad & (self.bad_run[keys] >= need)
        clear = was & good & (self.good_run[keys] >= self.clear_after)
        self.firing[keys[fire]] = True
        self.firing[keys[clear]] = False
        return keys[fire], keys[clear]

    def is_firing(self, keys: NDArray[np.int64]) -> NDArray[np.bool_]:
        out = np.zeros(keys.shape, bool)
        inside = keys < self.firing.shape[0]
        out[inside] = self.firing[keys[inside]]
        return out


class Symptoms:
    """The active alerts of one detector, by key."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.active: dict[int, Alert] = {}

    def fire(self, key: int, *, name: str, entity: str, ports: tuple[str, ...],
             labels: Mapping[str, str], evidence: Mapping[str, float], onset_ns: int,
             ts_ns: int, severity: Severity = Severity.WARNING,
             annotations: Mapping[str, str] | None = None) -> None:
        self.active[key] = Alert(
            name=name, entity=entity, severity=severity, labels=dict(labels),
            annotations=dict(annotations or {}), evidence=_finite(evidence), ports=ports,
            root_cause=False, confidence=1.0, starts_ns=int(onset_ns),
            updated_ns=int(ts_ns), source=self.source)

    def update(self, key: int, evidence: Mapping[str, float], ts_ns: int,
               severity: Severity | None = None) -> None:
        alert = self.active.get(key)
        if alert is None:
            return
        if severity is None:
            self.active[key] = alert.replace(evidence=_finite(evidence), updated_ns=int(ts_ns))
        else:
            self.active[key] = alert.replace(evidence=_finite(evidence), updated_ns=int(ts_ns),
                                             severity=severity)

    def restate(self, key: int, evidence: dict[str, float], ts_ns: int) -> None:
        """:meth:`update` with evidence already as kept (:meth:`EvidenceRows.kept`)."""
        self.active[key] = self.active[key].replace(evidence=evidence, updated_ns=ts_ns)

    def clear(self, key: int) -> None:
        self.active.pop(key, None)

    def alerts(self) -> list[Alert]:
        return list(self.active.values())


#: decimals a symptom's evidence keeps
EVIDENCE_DIGITS = 6


def _finite(evidence: Mapping[str, float]) -> dict[str, float]:
    """The finite values, rounded to :data:`EVIDENCE_DIGITS` decimals."""
    out = {}
    for k, v in evidence.items():
        f = float(v)
        if isfinite(f):
            out[k] = round(f, EVIDENCE_DIGITS)
    return out


class EvidenceRows:
    """Evidence columns (one value per judged key) read row by row: as given (:meth:`raw`, for a
    symptom that fires) or as a symptom keeps it (:meth:`kept`: :func:`_finite`'s values, the
    finite test made once per column)."""

    def __init__(self, columns: Mapping[str, NDArray[np.float64]]) -> None:
        self._columns = [(name, col.tolist(), np.isfinite(col).tolist())
                         for name, col in columns.items()]

    def raw(self, j: int) -> dict[str, float]:
        return {name: values[j] for name, values, _ in self._columns}

    def kept(self, j: int) -> dict[str, float]:
        return {name: round(values[j], EVIDENCE_DIGITS)
                for name, values, finite in self._columns if finite[j]}
