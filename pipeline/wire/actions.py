"""The actions topic: the audit trail, :class:`~pipeline.model.ActionResult` records as JSON lines.

A message holds one or more records, one JSON object per line (``\\n``-separated; blank lines
are ignored), keyed by the record's ``target`` so a target's records stay in order. Remediation
sends one record per message; ingest stores them.

The records are the message's items (:mod:`pipeline.wire.items`): a value with no line at all
raises :class:`~pipeline.errors.DecodeError`; a line that is not JSON, not an object, or not a
valid record (unknown or missing fields, wrong types) is reported by its line number and the other
lines are kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.model import ActionResult
from pipeline.wire.items import Decoded, json_lines


def encode_actions(results: Iterable[ActionResult]) -> bytes:
    return b"\n".join(r.model_dump_json().encode() for r in results)


def action_key(result: ActionResult) -> bytes:
    return result.target.encode()


def decode_actions(value: bytes | None) -> Decoded[list[ActionResult]]:
    """The records of a message, line by line; DecodeError when it holds no line."""
    return json_lines(value, ActionResult, "action")
