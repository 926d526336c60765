"""The one policy for a bad item, which every topic's codec follows.

* A decoder raises nothing but :class:`~pipeline.errors.DecodeError`, whatever the value holds:
  None (a Kafka tombstone), no bytes, truncated or random bytes, JSON of the wrong shape.
* A message that cannot be read at all raises it.
* A message that holds several items (the rows of a sample batch, the alerts of an alert list,
  the records of an actions message) is read item by item: the good items are kept and each bad
  one is reported as a :class:`BadItem` with its reason, together in a :class:`Decoded`.

What a consumer then does with either (the dead-letter topic, and going on) is
:mod:`pipeline.wire.deadletter`'s. This module also holds the JSON reading the JSON topics share.
"""

from __future__ import annotations

import json
from collections.abc import Sized
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import DecodeError

S = TypeVar("S", bound=Sized)
M = TypeVar("M", bound=BaseModel)

#: longest reason kept for one bad item
MAX_REASON = 300


class BadItem(BaseModel):
    """An item of a message that was not taken, and why. ``count`` items from ``index`` on share
    the reason (the rows of a sample batch with the same fault); ``index`` is the first of them,
    counted from 0 in the message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=0)
    count: int = Field(1, ge=1)
    reason: str


@dataclass(frozen=True)
class Decoded(Generic[S]):
    """What a readable message held: its good items and its bad ones."""

    items: S
    bad: tuple[BadItem, ...] = ()

    @property
    def bad_count(self) -> int:
        return sum(b.count for b in self.bad)

    def whole(self, what: str) -> S:
        """The items when every one was good; else DecodeError (for a caller that wrote the
        message itself and wants all of it: tests, tools)."""
        if self.bad:
            first = self.bad[0]
            raise DecodeError(f"{what}: {self.bad_count} bad item(s); item {first.index}: "
                              f"{first.reason}")
        return self.items


def present(value: bytes | None, what: str) -> bytes:
    """The bytes of a message value; DecodeError for a tombstone, a non-bytes or an empty value."""
    if value is None:
        raise DecodeError(f"{what}: the value is null (a tombstone)")
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if not isinstance(value, bytes):
        raise DecodeError(f"{what}: the value is a {type(value).__name__}, not bytes")
    if not value:
        raise DecodeError(f"{what}: the value is empty")
    return value


def parse_json(value: bytes | None, what: str) -> Any:
    """The JSON document a message value holds; DecodeError when it holds none."""
    data = present(value, what)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise DecodeError(f"{what} is not JSON: {_short(str(exc) or type(exc).__name__)}") \
            from None


_JSON_TYPES: dict[type, str] = {dict: "object", list: "array", str: "string"}


def parse_object(value: bytes | None, what: str) -> dict[str, Any]:
    """The JSON object a message value holds; DecodeError when it holds anything else."""
    raw = parse_json(value, what)
    if not isinstance(raw, dict):
        raise DecodeError(f"{what} must be a JSON object, not a JSON {json_type(raw)}")
    return raw


def json_type(value: Any) -> str:
    """JSON's name for the type of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def describe(exc: ValidationError, tag: object = None) -> str:
    """A validation error as ``field: problem; field: problem`` (a union's ``tag`` dropped from
    the locations: ``approve.target`` → ``target``)."""
    parts = []
    for error in exc.errors()[:5]:
        loc = error["loc"]
        if tag is not None and loc and loc[0] == tag:
            loc = loc[1:]
        parts.append(f"{'.'.join(str(p) for p in loc) or 'value'}: {error['msg']}")
    more = len(exc.errors()) - len(parts)
    return _short("; ".join(parts) + (f"; and {more} more" if more > 0 else ""))


def validate_item(raw: Any, model: type[M], what: str, index: int) -> M | BadItem:
    """One parsed JSON item as ``model``, or the reason it is not one."""
    if not isinstance(raw, dict):
        return BadItem(index=index, reason=f"{what} {index} is a JSON {json_type(raw)}, "
                                           "not an object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        return BadItem(index=index, reason=_short(f"{what} {index}: {describe(exc)}"))


def validate_items(raw: list[Any], model: type[M], what: str) -> Decoded[list[M]]:
    """Parsed JSON items as ``model``, item by item: the good ones kept, the others reported."""
    good: list[M] = []
    bad: list[BadItem] = []
    for index, item in enumerate(raw):
        result = validate_item(item, model, what, index)
        if isinstance(result, BadItem):
            bad.append(result)
        else:
            good.append(result)
    return Decoded(good, tuple(bad))


def json_lines(value: bytes | None, model: type[M], what: str) -> Decoded[list[M]]:
    """A message of one JSON object per line (blank lines ignored), each validated as ``model``:
    a line that is not JSON, not an object or not a valid item is a bad item named by its line
    number, the others are kept; DecodeError when the message holds no line at all."""
    lines = present(value, f"{what}s message").split(b"\n")
    good: list[M] = []
    bad: list[BadItem] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            bad.append(BadItem(index=index, reason=f"{what} {index} is not JSON: "
                                                   f"{str(exc)[:200]}"))
            continue
        result = validate_item(raw, model, what, index)
        if isinstance(result, BadItem):
            bad.append(result)
        else:
            good.append(result)
    if not good and not bad:
        raise DecodeError(f"{'an' if what[0] in 'aeiou' else 'a'} {what}s message must hold a "
                          "JSON object per line; this one is blank")
    return Decoded(good, tuple(bad))


def _short(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…"
