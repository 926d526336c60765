"""A per-port rule: evaluate the ports that got a new driving sample, persist, and keep symptoms.

Most detectors share one shape: when a port's driving metric has a new sample, judge it (bad,
good, or unknown, per port or per priority/queue slot), feed the verdicts to a
:class:`~detectors.base.Persistence`, and keep a symptom per key that fired. :class:`PortRule`
does that once; a detector supplies the driver, the judgement and the symptom's name.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from detectors.base import Detector, DetectorOptions, EvidenceRows, Persistence, Symptoms
from detectors.features import QUAL_SLOTS, Frame, cols
from detectors.ports import PortIndex, PortKind
from detectors.signals import At
from pipeline.metrics import CATALOG, METRIC_ID
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology

B = NDArray[np.bool_]
F = NDArray[np.float64]
#: a rule's options model (``self.opts`` is typed by it)
Opts = TypeVar("Opts", bound=DetectorOptions)


@dataclass
class Verdict:
    """Per evaluated port × slot: bad, good (neither = unknown), and evidence columns."""

    bad: B
    good: B
    evidence: Mapping[str, F] = field(default_factory=dict)
    #: optional per-key evidence needed before firing (else the rule's ``fire_after``)
    fire_after: NDArray[np.int64] | None = None
    severity: Severity = Severity.WARNING
    #: which evaluations could be made (default: the bad and the good ones); one that was made
    #: and is neither breaks the runs (:class:`~detectors.base.Persistence`)
    known: B | None = None


class PortRule(Detector, Generic[Opts]):
    """Base of the per-port detectors (``Opts``: the rule's options, as ``self.opts``)."""

    #: the metric whose new samples trigger an evaluation of a port
    driver: ClassVar[str]
    #: the symptom name this rule raises
    symptom: ClassVar[str]
    #: 1 for a per-port rule, 8 for a per-priority / per-queue rule
    slots: ClassVar[int] = 1
    #: the label naming a slot ("priority" or "queue")
    slot_label: ClassVar[str] = ""

    def __init__(self, instance: str, options: Opts, *, topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.persistence = Persistence(options.fire_after, options.clear_after)
        self.symptoms = Symptoms(self.name)
        self.last_eval = np.full(0, -1, np.int64)
        m = METRIC_ID[self.driver]
        self._driver_cols = cols(self.driver) if CATALOG[m].qualifier else slice(
            int(cols(self.driver).start), int(cols(self.driver).start) + 1)

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        n = frame.table.n_ports
        if self.last_eval.shape[0] < n:
            self.last_eval = np.concatenate([self.last_eval,
                                             np.full(n - self.last_eval.shape[0], -1, np.int64)])
        pids = self.candidates(frame)
        if pids.size:
            ts = frame.table.ts[pids, self._driver_cols].max(axis=1)
            new = ts > self.last_eval[pids]
            pids, ts = pids[new], ts[new]
        if pids.size:
            self.last_eval[pids] = ts
            at = At.driven_by(frame, pids, ts, int(self._driver_cols.start))
            verdict = self.evaluate(frame, at)
            self._advance(frame.ports, at, verdict)
        return self.symptoms.alerts()

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        """Ports this rule may judge (default: every touched port with a name)."""
        return frame.touched_of(PortKind.HOST, PortKind.FABRIC, PortKind.UNKNOWN)

    @abstractmethod
    def evaluate(self, frame: Frame, at: At) -> Verdict:
        """Judge the ports ``at.pids`` at ``at.ts`` (arrays shaped ports × ``slots``)."""

    def firing(self, pids: NDArray[np.int64], slot: int = 0) -> NDArray[np.bool_]:
        """Whether this rule's symptom is firing on these ports (and slot)."""
        return self.persistence.is_firing(pids * QUAL_SLOTS + slot)

    def annotations(self, evidence: dict[str, float]) -> dict[str, str]:
        """Extra text a symptom carries when it fires (default none)."""
        return {}

    def labels(self, ports: PortIndex, pid: int, slot: int) -> dict[str, str]:
        out = {"device": ports.device(pid), "port": ports.names.port_name[pid]}
        if self.slots > 1:
            out[self.slot_label] = str(slot)
        return out

    def _advance(self, ports: PortIndex, at: At, v: Verdict) -> None:
        k = self.slots
        keys = (at.pids[:, None] * QUAL_SLOTS + np.arange(k)[None, :]).ravel()
        ts = np.repeat(at.ts, k)
        bad = np.asarray(v.bad, bool).reshape(-1, k).ravel()
        good = np.asarray(v.good, bool).reshape(-1, k).ravel()
        need = None if v.fire_after is None else np.asarray(v.fire_after).reshape(-1, k).ravel()
        known = None if v.known is None else np.broadcast_to(
            np.asarray(v.known, bool).reshape(at.pids.size, -1), (at.pids.size, k)).ravel()
        fired, cleared = self.persistence.step(keys, bad, good, ts, need, known)
        for key in cleared.tolist():
            self.symptoms.clear(key)
        firing = self.persistence.is_firing(keys)
        if not firing.any():
            return
        fired_set = set(fired.tolist())
        on = np.flatnonzero(firing)  # the firing keys' values, as Python numbers
        ev = {name: np.asarray(arr, np.float64).reshape(-1, k).ravel()[on]
              for name, arr in v.evidence.items()}
        rows = EvidenceRows(ev)
        judged = (bad | good)[on].tolist()
        active = self.symptoms.active
        for j, (key, t) in enumerate(zip(keys[on].tolist(), ts[on].tolist(), strict=True)):
            if key not in fired_set and key in active:
                if judged[j]:  # restated with its new evidence
                    self.symptoms.restate(key, rows.kept(j), t)
                continue
            evidence = rows.raw(j)
            pid, slot = divmod(key, QUAL_SLOTS)
            label = ports.label(pid)
            self.symptoms.fire(
                key, name=self.symptom, entity=label, ports=(label,),
                labels=self.labels(ports, pid, slot), evidence=evidence,
                onset_ns=int(self.persistence.onset_ns[key]), ts_ns=t,
                severity=v.severity, annotations=self.annotations(evidence))


@dataclass
class DeviceVerdict:
    bad: bool
    good: bool
    evidence: dict[str, float] = field(default_factory=dict)
    ports: tuple[str, ...] = ()
    #: whether the switch could be judged (default: when bad or good); judged and neither breaks
    #: the runs
    known: bool | None = None
    #: bad evaluations in a row needed to fire on this one (default: the rule's ``fire_after``);
    #: :data:`CONTINUES` for a bad one that may continue a run but never completes it
    fire_after: int | None = None


#: a bad verdict that counts towards a run but cannot end it (a sample that straddles an onset
#: and shows part of the change)
CONTINUES = 1 << 30


class DeviceRule(Detector, Generic[Opts]):
    """Base of the per-switch detectors: judge a switch from all its ports at one sample time
    (``Opts``: the rule's options, as ``self.opts``)."""

    driver: ClassVar[str]
    symptom: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING

    def __init__(self, instance: str, options: Opts, *, topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options
        self.persistence = Persistence(options.fire_after, options.clear_after)
        self.symptoms = Symptoms(self.name)
        self.last_eval: dict[int, int] = {}
        self._driver = int(cols(self.driver).start)
        self._width = int(cols(self.driver).stop) - self._driver

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        due = self._due(frame)
        if not due:
            return self.symptoms.alerts()
        # one At over every due switch's ports: each signal is computed once, for all of them,
        # and each switch is judged on its part (the same values as an At of its own)
        sizes = [pids.size for _, pids, _ in due]
        whole = At.driven_by(frame, np.concatenate([pids for _, pids, _ in due]),
                             np.repeat(np.array([ts for _, _, ts in due], np.int64), sizes),
                             self._driver)
        verdicts = []
        lo = 0
        for (did, _, _), size in zip(due, sizes, strict=True):
            verdicts.append(self.evaluate_device(frame, did, whole.split(slice(lo, lo + size))))
            lo += size
        self._advance(frame, due, verdicts)
        return self.symptoms.alerts()

    def _due(self, frame: Frame) -> list[tuple[int, NDArray[np.int64], int]]:
        """The switches with news whose driver has a sample time newer than their last
        evaluation's: (device id, its ports, that time), in device id order. Each one's time is
        the newest of the driver's slots over its ports, read for all of them at once."""
        ports = frame.ports
        touched = frame.touched[ports.kind[frame.touched] != PortKind.DEVICE]
        found = [(did, pids) for did in np.unique(ports.device_id[touched]).tolist()
                 if ports.is_switch(did) and (pids := ports.ports_of_id(did)).size]
        if not found:
            return []
        every = np.concatenate([pids for _, pids in found])
        starts = np.cumsum([0] + [pids.size for _, pids in found[:-1]])
        newest = frame.table.ts[every, self._driver:self._driver + self._width].max(axis=1)
        times = np.maximum.reduceat(newest, starts).tolist()
        due = []
        for (did, pids), ts in zip(found, times, strict=True):
            if ts > self.last_eval.get(did, -1):
                self.last_eval[did] = ts
                due.append((did, pids, ts))
        return due

    @abstractmethod
    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        """Judge one switch from its ports ``at.pids`` at one sample time."""

    def _advance(self, frame: Frame, due: list[tuple[int, NDArray[np.int64], int]],
                 verdicts: list[DeviceVerdict]) -> None:
        """Every judged switch's verdict through the persistence at once, then its symptom."""
        keys = np.array([did for did, _, _ in due], np.int64)
        fired, cleared = self.persistence.step(
            keys, np.array([v.bad for v in verdicts]), np.array([v.good for v in verdicts]),
            np.array([ts for _, _, ts in due], np.int64),
            fire_after=np.array([self.opts.fire_after if v.fire_after is None else v.fire_after
                                 for v in verdicts], np.int64),
            known=np.array([bool(v.known) for v in verdicts]))
        fired_set, cleared_set = set(fired.tolist()), set(cleared.tolist())
        firing = self.persistence.is_firing(keys)
        for (did, _, ts), v, on in zip(due, verdicts, firing.tolist(), strict=True):
            if did in cleared_set:
                self.symptoms.clear(did)
            if not on:
                continue
            device = frame.ports.names.devices[did]
            if did in fired_set or did not in self.symptoms.active:
                self.symptoms.fire(did, name=self.symptom, entity=device, ports=v.ports,
                                   labels={"device": device}, evidence=v.evidence,
                                   onset_ns=int(self.persistence.onset_ns[did]), ts_ns=ts,
                                   severity=self.severity)
            elif v.bad or v.good:
                self.symptoms.update(did, v.evidence, ts)
