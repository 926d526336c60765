"""The symptoms topic: what a detect worker found at one step, for the fabric-wide correlator.

A partitioned deployment's detect workers (:mod:`detectors.partition.worker`) judge the devices
of their share of the samples partitions and publish, per step, one :class:`SymptomReport`:
who they are, the step's event time and the fabric's sample interval as they measured it, the
devices they judged at that step, every symptom they hold active now, the summaries of the
switches a rule compares with their peers (a few numbers per switch and sample,
:class:`DeviceSummary`), and the sample rows of the metrics the other cross-device rules read
(device configuration; :mod:`detectors.partition.rules`). A message is one report, keyed by its
worker.

Layout of version 1 (integers little-endian)::

    offset  size  field
    0       4     magic  b"RWSY"
    4       1     version (1)
    5       3     reserved, zero
    8       4     h, the length in bytes of the header
    12      h     the header: a JSON object {"worker", "now_ns", "interval_ns", "judged",
                  "symptoms", "summaries"}; ``symptoms`` is an array of alerts
                  (:mod:`pipeline.wire.alerts`'s fields), ``summaries`` an array of
                  {"rule", "device", "ts_ns", "values", "ports"} (null for a value that is not
                  a number)
    12+h    ...   the forwarded rows: a sample batch (:mod:`pipeline.wire.samples`), or nothing

What cannot be read as a report (a tombstone, a short message, a wrong magic or version, a header
that is not the object above, forwarded rows that are not a batch) raises
:class:`~pipeline.errors.DecodeError`; a symptom that is not a valid alert, a summary that is not
valid, and forwarded rows outside the batch's vocabularies or catalog, are reported and the rest
of the report is kept.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import DecodeError
from pipeline.model import Alert, SampleBatch
from pipeline.wire.items import BadItem, Decoded, describe, parse_object, present, validate_items
from pipeline.wire.samples import decode_samples, encode_batch

MAGIC = b"RWSY"
VERSION = 1
_HEADER = struct.Struct("<4sB3xI")


class DeviceSummary(BaseModel):
    """What a rule that compares switches read of one switch at one sample time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the detector instance that summed it up
    rule: str
    device: str
    ts_ns: int
    #: its numbers (None: not a number)
    values: dict[str, float | None]
    ports: tuple[str, ...] = ()


@dataclass(frozen=True)
class SymptomReport:
    """One worker's step."""

    worker: str
    now_ns: int
    #: the fabric's typical sample interval as the worker measures it (0 before any rate)
    interval_ns: int
    #: the devices whose samples this step judged: the worker is their owner from now on
    judged: tuple[str, ...]
    #: every symptom the worker holds active now (of the devices it judged at some step)
    symptoms: tuple[Alert, ...]
    #: rows of the metrics the fabric-side rules read (None: none at this step)
    inputs: SampleBatch | None = field(default=None, compare=False)
    #: the switches summed up for the rules that compare them with their peers
    summaries: tuple[DeviceSummary, ...] = ()

    def __len__(self) -> int:
        """The report's items: its symptoms."""
        return len(self.symptoms)


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid")

    worker: str = Field(min_length=1)
    now_ns: int = Field(ge=0)
    interval_ns: int = Field(ge=0)
    judged: tuple[str, ...]
    symptoms: list[Any]
    summaries: list[Any] = []


def report_key(report: SymptomReport) -> bytes:
    """A worker's reports stay in order: one key per worker."""
    return report.worker.encode()


def encode_report(report: SymptomReport) -> bytes:
    fields = json.dumps({"worker": report.worker, "now_ns": report.now_ns,
                         "interval_ns": report.interval_ns, "judged": list(report.judged)})
    header = (fields[:-1].encode() + b',"symptoms":['
              + b",".join(a.model_dump_json().encode() for a in report.symptoms)
              + b'],"summaries":['
              + b",".join(s.model_dump_json().encode() for s in report.summaries) + b"]}")
    rows = encode_batch(report.inputs) if report.inputs is not None and len(report.inputs) \
        else b""
    return _HEADER.pack(MAGIC, VERSION, len(header)) + header + rows


def decode_report(value: bytes | None) -> Decoded[SymptomReport]:
    data = present(value, "symptom report")
    if len(data) < _HEADER.size:
        raise DecodeError(f"a symptom report is at least {_HEADER.size} bytes, not {len(data)}")
    magic, version, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise DecodeError(f"not a symptom report (magic {magic!r})")
    if version != VERSION:
        raise DecodeError(f"symptom report version {version} is not one this reader knows "
                          f"({VERSION})")
    if data[5:8] != b"\0\0\0":
        raise DecodeError("a symptom report's reserved bytes must be zero")
    end = _HEADER.size + length
    if end > len(data):
        raise DecodeError(f"a symptom report's header runs past its end ({end} > {len(data)})")
    try:
        header = _Header.model_validate(parse_object(data[_HEADER.size:end],
                                                     "symptom report header"))
    except ValidationError as exc:
        raise DecodeError(f"symptom report header: {describe(exc)}") from None
    symptoms = validate_items(header.symptoms, Alert, "symptom")
    summaries = validate_items(header.summaries, DeviceSummary, "summary")
    bad: list[BadItem] = [*symptoms.bad, *summaries.bad]
    inputs = None
    if end < len(data):
        rows = decode_samples(data[end:])
        inputs = rows.items
        bad.extend(b.model_copy(update={"reason": f"forwarded rows: {b.reason}"})
                   for b in rows.bad)
    report = SymptomReport(header.worker, header.now_ns, header.interval_ns, header.judged,
                           tuple(symptoms.items), inputs, tuple(summaries.items))
    return Decoded(report, tuple(bad))
