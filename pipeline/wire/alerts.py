"""The alerts topic: alert state changes, as a JSON array of :class:`~pipeline.model.Alert`.

Each element is the model's fields (``name``, ``entity``, ``severity``, ``labels``,
``annotations``, ``evidence``, ``ports``, ``root_cause``, ``confidence``, ``explains``,
``inhibited_by``, ``starts_ns``, ``updated_ns``, ``ends_ns``, ``source``); the
fingerprint is derived from the identity, never sent. A publisher keys its messages with its own
name (``detect``, ``remediation``) so its changes stay in order.

The alerts are the message's items (:mod:`pipeline.wire.items`): a value that is not a JSON array
raises :class:`~pipeline.errors.DecodeError`; an element that is not a valid alert (unknown or
missing fields, wrong types) is reported and the others are kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import TypeAdapter, ValidationError

from pipeline.errors import DecodeError
from pipeline.model import Alert
from pipeline.wire.items import Decoded, json_type, parse_json, present, validate_items

_ALERTS: TypeAdapter[list[Alert]] = TypeAdapter(list[Alert])


def encode_alerts(alerts: Iterable[Alert]) -> bytes:
    return b"[" + b",".join(a.model_dump_json().encode() for a in alerts) + b"]"


def decode_alerts(value: bytes | None) -> Decoded[list[Alert]]:
    """The alerts of a message, item by item; DecodeError when it holds no JSON array.

    A message whose every alert is good (nearly all of them) is parsed and validated in one
    pass; only one with a bad part is read again item by item, for the reasons."""
    try:
        return Decoded(_ALERTS.validate_json(present(value, "alert list")))
    except ValidationError:
        pass
    raw = parse_json(value, "alert list")
    if not isinstance(raw, list):
        raise DecodeError(f"an alert list must be a JSON array, not a JSON {json_type(raw)}")
    return validate_items(raw, Alert, "alert")
