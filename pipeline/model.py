"""The data model: the only types that cross a process, bus or storage boundary.

* :class:`SampleBatch` — telemetry samples in columns (numpy arrays). Strings are dictionary-encoded
  per batch (``devices``/``ports`` vocabularies, ``device``/``port`` code columns); ``metric`` holds
  catalog codes (:mod:`pipeline.metrics`); ``qual`` holds the PFC priority or queue index (-1 when
  the metric has none). Every sample carries the device's event time in ``ts_ns``.
* :class:`Alert` — a symptom or a root-cause incident, with Alertmanager's identity semantics.
* :class:`ActionResult` — the audit record of every notification, drain and TE notice.

How each travels on the bus is :mod:`pipeline.wire`'s (one module per topic).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import DecodeError
from pipeline.metrics import CATALOG, IS_COUNTER

#: flags bit: the value comes from a 32-bit counter and wraps at 2**32.
FLAG_COUNTER32 = 1
#: flags bit: the device's counters restarted before this sample (reboot, clear).
FLAG_RESET = 2


@dataclass(frozen=True, eq=False)
class SampleBatch:
    """Samples in columns; all arrays have the same length."""

    ts_ns: NDArray[np.int64]
    device: NDArray[np.int32]
    port: NDArray[np.int32]
    metric: NDArray[np.uint16]
    qual: NDArray[np.int16]
    value: NDArray[np.float64]
    flags: NDArray[np.uint8]
    devices: tuple[str, ...]
    ports: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.ts_ns.shape[0])

    @classmethod
    def empty(cls) -> SampleBatch:
        return cls(
            np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int32),
            np.empty(0, np.uint16), np.empty(0, np.int16), np.empty(0, np.float64),
            np.empty(0, np.uint8), (), (),
        )

    def validate(self) -> SampleBatch:
        """Check shapes, dtypes and code ranges; raise DecodeError on the first problem."""
        n = len(self)
        cols: dict[str, tuple[NDArray[Any], type[np.generic]]] = {
            "ts_ns": (self.ts_ns, np.int64), "device": (self.device, np.int32),
            "port": (self.port, np.int32), "metric": (self.metric, np.uint16),
            "qual": (self.qual, np.int16), "value": (self.value, np.float64),
            "flags": (self.flags, np.uint8),
        }
        for name, (arr, dtype) in cols.items():
            if arr.dtype != dtype or arr.ndim != 1 or arr.shape[0] != n:
                raise DecodeError(f"column {name}: want {np.dtype(dtype)}[{n}], "
                                  f"got {arr.dtype}{list(arr.shape)}")
        if n:
            if self.device.min() < 0 or self.device.max() >= len(self.devices):
                raise DecodeError("device code out of range of the batch's vocabulary")
            if self.port.min() < 0 or self.port.max() >= len(self.ports):
                raise DecodeError("port code out of range of the batch's vocabulary")
            if int(self.metric.max()) >= len(CATALOG):
                raise DecodeError(f"metric code {int(self.metric.max())} is not in the catalog")
        return self

    @property
    def is_counter(self) -> NDArray[np.bool_]:
        return IS_COUNTER[self.metric]

    def device_names(self) -> NDArray[np.object_]:
        return np.asarray(self.devices, dtype=object)[self.device] if len(self) else _EMPTY_OBJ

    def port_names(self) -> NDArray[np.object_]:
        return np.asarray(self.ports, dtype=object)[self.port] if len(self) else _EMPTY_OBJ

    def metric_names(self) -> NDArray[np.object_]:
        names = np.asarray([m.name for m in CATALOG], dtype=object)
        return names[self.metric] if len(self) else _EMPTY_OBJ

    def take(self, index: NDArray[np.intp] | NDArray[np.bool_]) -> SampleBatch:
        """A batch of the selected rows (a mask or indices); vocabularies are kept."""
        return SampleBatch(
            self.ts_ns[index], self.device[index], self.port[index], self.metric[index],
            self.qual[index], self.value[index], self.flags[index], self.devices, self.ports,
        )

    def rows(self) -> Iterator[tuple[int, str, str, str, int, float, int]]:
        """Rows as ``(ts_ns, device, port, metric, qual, value, flags)`` (tests, debugging)."""
        for i in range(len(self)):
            yield (int(self.ts_ns[i]), self.devices[self.device[i]], self.ports[self.port[i]],
                   CATALOG[self.metric[i]].name, int(self.qual[i]), float(self.value[i]),
                   int(self.flags[i]))

    @staticmethod
    def concat(batches: Sequence[SampleBatch]) -> SampleBatch:
        """Join batches, merging their vocabularies."""
        batches = [b for b in batches if len(b)]
        if not batches:
            return SampleBatch.empty()
        if len(batches) == 1:
            return batches[0]
        dev_vocab: dict[str, int] = {}
        port_vocab: dict[str, int] = {}
        # a vocabulary met again (switches of one model name their ports alike) maps as it did
        # the first time: every name of it is in the merged vocabulary by then
        port_maps: dict[tuple[str, ...], NDArray[np.int32]] = {}
        dev_cols, port_cols = [], []
        for b in batches:
            dmap = _merged(dev_vocab, b.devices)
            pmap = port_maps.get(b.ports)
            if pmap is None:
                pmap = port_maps[b.ports] = _merged(port_vocab, b.ports)
            dev_cols.append(dmap[b.device])
            port_cols.append(pmap[b.port])
        return SampleBatch(
            np.concatenate([b.ts_ns for b in batches]), np.concatenate(dev_cols),
            np.concatenate(port_cols), np.concatenate([b.metric for b in batches]),
            np.concatenate([b.qual for b in batches]), np.concatenate([b.value for b in batches]),
            np.concatenate([b.flags for b in batches]), tuple(dev_vocab), tuple(port_vocab),
        )


_EMPTY_OBJ: NDArray[np.object_] = np.empty(0, dtype=object)


def _merged(vocab: dict[str, int], names: tuple[str, ...]) -> NDArray[np.int32]:
    """Codes of ``names`` in a merged vocabulary, new names added in their order."""
    return np.fromiter((vocab.setdefault(n, len(vocab)) for n in names), np.int32, len(names))


class BatchBuilder:
    """Accumulates samples row by row and hands them over as one columnar batch.

    The per-row cost is a few list appends; vocabularies are built as rows arrive.
    """

    __slots__ = ("_dev", "_devices", "_flags", "_metric", "_port", "_ports", "_qual", "_ts",
                 "_value")

    def __init__(self) -> None:
        self._devices: dict[str, int] = {}
        self._ports: dict[str, int] = {"": 0}
        self._reset()

    def _reset(self) -> None:
        self._ts: list[int] = []
        self._dev: list[int] = []
        self._port: list[int] = []
        self._metric: list[int] = []
        self._qual: list[int] = []
        self._value: list[float] = []
        self._flags: list[int] = []

    def __len__(self) -> int:
        return len(self._ts)

    def device_code(self, device: str) -> int:
        code = self._devices.get(device)
        if code is None:
            code = self._devices[device] = len(self._devices)
        return code

    def port_code(self, port: str) -> int:
        code = self._ports.get(port)
        if code is None:
            code = self._ports[port] = len(self._ports)
        return code

    def add(self, ts_ns: int, device: str, port: str, metric: int, qual: int, value: float,
            flags: int = 0) -> None:
        self.add_coded(ts_ns, self.device_code(device), self.port_code(port), metric, qual,
                       value, flags)

    def add_coded(self, ts_ns: int, device: int, port: int, metric: int, qual: int,
                  value: float, flags: int = 0) -> None:
        self._ts.append(ts_ns)
        self._dev.append(device)
        self._port.append(port)
        self._metric.append(metric)
        self._qual.append(qual)
        self._value.append(value)
        self._flags.append(flags)

    def build(self) -> SampleBatch:
        """Return the rows added so far as a batch and start afresh (vocabularies are kept)."""
        batch = SampleBatch(
            np.array(self._ts, dtype=np.int64), np.array(self._dev, dtype=np.int32),
            np.array(self._port, dtype=np.int32), np.array(self._metric, dtype=np.uint16),
            np.array(self._qual, dtype=np.int16), np.array(self._value, dtype=np.float64),
            np.array(self._flags, dtype=np.uint8), tuple(self._devices), tuple(self._ports),
        )
        self._reset()
        return batch


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


def fingerprint(labels: dict[str, str]) -> str:
    """Alertmanager's label-set fingerprint: FNV-1a 64 over sorted names and values, each
    followed by a 0xFF byte, as 16 lowercase hex digits."""
    h = 0xCBF29CE484222325
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode() + b"\xff":
                h ^= byte
                h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


@lru_cache(maxsize=65536)
def _cached_fingerprint(name: str, entity: str, labels: tuple[tuple[str, str], ...]) -> str:
    return fingerprint({**dict(labels), "alertname": name, "entity": entity})


#: the fields an alert's identity (and so its fingerprint) is made of
_IDENTITY = frozenset({"name", "entity", "labels"})
#: the ``__dict__`` key under which an alert keeps its fingerprint once computed (not a field:
#: never serialised, compared or hashed); a copy given another identity drops it
_FINGERPRINT = "_fingerprint"


class Alert(BaseModel):
    """A symptom on a port or link, or a root-cause incident on an entity.

    Identity is ``name`` + ``entity`` + ``labels`` (Alertmanager's label set, with ``alertname``);
    the fingerprint hashes it. ``ends_ns`` is None while the alert fires.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    entity: str
    severity: Severity = Severity.WARNING
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    evidence: dict[str, float] = Field(default_factory=dict)
    ports: tuple[str, ...] = ()
    root_cause: bool = True
    confidence: float = 1.0
    explains: tuple[str, ...] = ()
    inhibited_by: str | None = None
    starts_ns: int
    updated_ns: int
    ends_ns: int | None = None
    source: str = ""

    @property
    def identity(self) -> dict[str, str]:
        return {**self.labels, "alertname": self.name, "entity": self.entity}

    @property
    def fingerprint(self) -> str:
        """Computed once per alert (alerts are frozen, and their labels are never changed in
        place) and kept by its copies that keep its identity."""
        d = self.__dict__
        fp: str | None = d.get(_FINGERPRINT)
        if fp is None:
            labels = d["labels"]
            fp = d[_FINGERPRINT] = _cached_fingerprint(
                d["name"], d["entity"], tuple(sorted(labels.items())) if labels else ())
        return fp

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """Pydantic's copy; one given another identity computes its own fingerprint."""
        copied = super().model_copy(update=update, deep=deep)
        if update and not _IDENTITY.isdisjoint(update):
            copied.__dict__.pop(_FINGERPRINT, None)
        return copied

    def replace(self, **changes: Any) -> Self:
        """``model_copy(update=changes)`` without pydantic's generic copy machinery: the same
        shallow copy (fields set included; values not validated: they must already be of the
        fields' types), at a fraction of the cost, for the thousands of symptoms a step
        re-states."""
        cls = type(self)
        new = cls.__new__(cls)
        d = self.__dict__.copy()
        d.update(changes)
        if not _IDENTITY.isdisjoint(changes):
            d.pop(_FINGERPRINT, None)
        fields_set = self.__pydantic_fields_set__
        if not fields_set.issuperset(changes):
            fields_set = fields_set | changes.keys()
        # else shared: a frozen model's fields set is never changed (a copy copies it first)
        private = self.__pydantic_private__
        _set = object.__setattr__
        _set(new, "__dict__", d)
        _set(new, "__pydantic_fields_set__", fields_set)
        _set(new, "__pydantic_extra__", None)  # extra="forbid"
        _set(new, "__pydantic_private__", None if private is None else dict(private))
        return new

    @property
    def firing(self) -> bool:
        return self.ends_ns is None


ActionMode = Literal["dry_run", "approval", "auto"]
ActionOutcome = Literal["done", "refused", "failed", "pending", "skipped"]


class ActionResult(BaseModel):
    """The audit record of one notification, drain, undrain or TE notice."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    action: str
    target: str
    alert_fingerprint: str = ""
    alert_name: str = ""
    mode: ActionMode = "dry_run"
    outcome: ActionOutcome
    detail: str = ""
    steps: tuple[dict[str, Any], ...] = ()
    at_ns: int

