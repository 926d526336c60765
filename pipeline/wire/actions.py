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

import json
from collections.abc import Iterable

from pipeline.errors import DecodeError
from pipeline.model import ActionResult
from pipeline.wire.items import BadItem, Decoded, present, validate_item


def encode_actions(results: Iterable[ActionResult]) -> bytes:
    return b"\n".join(r.model_dump_json().encode() for r in results)


def action_key(result: ActionResult) -> bytes:
    return result.target.encode()


def decode_actions(value: bytes | None) -> Decoded[list[ActionResult]]:
    """The records of a message, line by line; DecodeError when it holds no line."""
    lines = present(value, "actions message").split(b"\n")
    good: list[ActionResult] = []
    bad: list[BadItem] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            bad.append(BadItem(index=index, reason=f"action {index} is not JSON: "
                                                   f"{str(exc)[:200]}"))
            continue
        result = validate_item(raw, ActionResult, "action", index)
        if isinstance(result, BadItem):
            bad.append(result)
        else:
            good.append(result)
    if not good and not bad:
        raise DecodeError("an actions message must hold a JSON object per line; this one is blank")
    return Decoded(good, tuple(bad))
