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

from pipeline.errors import DecodeError
from pipeline.model import Alert
from pipeline.wire.items import Decoded, json_type, parse_json, validate_items


def encode_alerts(alerts: Iterable[Alert]) -> bytes:
    return b"[" + b",".join(a.model_dump_json().encode() for a in alerts) + b"]"


def decode_alerts(value: bytes | None) -> Decoded[list[Alert]]:
    """The alerts of a message, item by item; DecodeError when it holds no JSON array."""
    raw = parse_json(value, "alert list")
    if not isinstance(raw, list):
        raise DecodeError(f"an alert list must be a JSON array, not a JSON {json_type(raw)}")
    return validate_items(raw, Alert, "alert")
