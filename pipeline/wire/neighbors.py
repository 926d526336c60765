"""The neighbors topic: what devices say over LLDP, as JSON lines of
:class:`~pipeline.topology.neighbors.NeighborReport` records.

A message holds one or more reports, one JSON object per line (``\\n``-separated; blank lines are
ignored), keyed by the reporting device so a device's reports stay in order. The collectors send
one report per message, every LLDP interval; ingest records what changed, detection compares it
with the declared topology.

The reports are the message's items (:mod:`pipeline.wire.items`): a value with no line at all
raises :class:`~pipeline.errors.DecodeError`; a line that is not JSON, not an object, or not a
valid report is reported by its line number and the other lines are kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.topology.neighbors import NeighborReport
from pipeline.wire.items import Decoded, json_lines


def encode_reports(reports: Iterable[NeighborReport]) -> bytes:
    return b"\n".join(r.model_dump_json().encode() for r in reports)


def report_key(report: NeighborReport) -> bytes:
    return report.device.encode()


def decode_reports(value: bytes | None) -> Decoded[list[NeighborReport]]:
    """The reports of a message, line by line; DecodeError when it holds no line."""
    return json_lines(value, NeighborReport, "report")
