"""The dead-letter topic: what a consumer could not read, with where it came from and why; and the
policy every consumer follows with a message it cannot read.

A dead letter is one JSON object per message (format version 1), keyed like the message it
stands for::

    {"version": 1, "topic": "rocewatch.samples", "partition": 3, "offset": 1841,
     "key": "leaf17", "key_b64": "bGVhZjE3", "value_b64": "UldTQgIAAAA...", "value_size": 59422,
     "value_truncated": false,
     "reason": "sample batch of 2048 rows should be 59425 bytes, got 59422",
     "items": [], "kept": 0, "group": "ingest", "parked_at_ns": 1767225600000000000}

* ``topic``/``partition``/``offset``: the message's origin; ``key`` its key as UTF-8 text
  (undecodable bytes replaced), ``key_b64`` the exact key; both null for a message without one.
* ``value_b64``: the original value, base64; null for a tombstone (a null value), ``""`` for an
  empty one. ``value_size`` is its length in bytes (null for a tombstone); values longer than
  :data:`MAX_VALUE_BYTES` are cut to that length (``value_truncated``) so the letter fits the bus.
* ``reason``: why it was not read, or, for a message of several items of which only some were
  bad, how many were bad; ``items`` then lists them (``index``, ``count``, ``reason``: see
  :class:`~pipeline.wire.items.BadItem`, at most :data:`MAX_ITEMS` entries) and ``kept`` says how
  many good items the consumer took from the message.
* ``group``: the consumer group that could not read it (every consumer of a topic parks what it
  cannot read, so a message several groups read may be parked by each); ``parked_at_ns``: the
  wall-clock time it was parked (informational; event time is the message's own business).

:class:`DeadLetters` is the policy: a consumer hands it each message with the topic's decoder;
it returns the decoded value, or parks the message and says so; nothing a message holds, whatever
the decoder raises, stops the consumer. The consumer flushes the parked letters before it commits
the messages they stand for, so nothing is lost between the two.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.bus.base import Message, Producer
from pipeline.errors import DecodeError
from pipeline.wire.items import BadItem, Decoded, S, describe, parse_object

log = logging.getLogger("rocewatch.deadletter")

T = TypeVar("T")

VERSION: Literal[1] = 1
#: the most bytes of the original value a dead letter carries (its base64 stays under 1 MB)
MAX_VALUE_BYTES = 600_000
#: the most bad items a dead letter lists (the reason counts them all)
MAX_ITEMS = 100
#: the longest reason a dead letter carries
MAX_REASON = 1000


class DeadLetter(BaseModel):
    """One message a consumer could not read (whole or in part)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = VERSION
    topic: str
    partition: int
    offset: int
    key: str | None
    key_b64: str | None
    value_b64: str | None
    value_size: int | None = Field(ge=0)
    value_truncated: bool = False
    reason: str
    items: tuple[BadItem, ...] = ()
    kept: int = Field(0, ge=0)
    group: str
    parked_at_ns: int

    def value(self) -> bytes | None:
        """The original value (its first :data:`MAX_VALUE_BYTES` when truncated)."""
        return None if self.value_b64 is None else base64.b64decode(self.value_b64)

    def original_key(self) -> bytes | None:
        return None if self.key_b64 is None else base64.b64decode(self.key_b64)

    def summary(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}: {self.reason}"


def letter_for(msg: Message, reason: str, group: str, items: Sequence[BadItem] = (),
               kept: int = 0) -> DeadLetter:
    value = msg.value
    size = None if value is None else len(value)
    cut = value if value is None or len(value) <= MAX_VALUE_BYTES else value[:MAX_VALUE_BYTES]
    key = msg.key
    return DeadLetter(
        topic=msg.topic, partition=msg.partition, offset=msg.offset,
        key=None if key is None else key.decode(errors="replace"),
        key_b64=None if key is None else base64.b64encode(key).decode(),
        value_b64=None if cut is None else base64.b64encode(cut).decode(),
        value_size=size, value_truncated=cut is not value, reason=_cut(reason),
        items=tuple(items[:MAX_ITEMS]), kept=kept, group=group, parked_at_ns=time.time_ns())


def encode_dead_letter(letter: DeadLetter) -> bytes:
    return letter.model_dump_json().encode()


def decode_dead_letter(value: bytes | None) -> DeadLetter:
    """Parse a dead letter; DecodeError says what is wrong with it."""
    try:
        return DeadLetter.model_validate(parse_object(value, "dead letter"))
    except ValidationError as exc:
        raise DecodeError(f"bad dead letter: {describe(exc)}") from None


@dataclass
class DeadLetterStats:
    """What one consumer parked (shown in its health)."""

    #: dead letters written (a message with some bad items counts once)
    parked: int = 0
    #: messages that could not be read at all
    unreadable: int = 0
    #: items left out of messages whose other items were taken
    bad_items: int = 0
    #: dead letters by the topic of the message
    by_topic: dict[str, int] = field(default_factory=dict)
    #: the newest dead letter's origin and reason
    last: str = ""


class DeadLetters:
    """The policy for one consumer group: read each message with its topic's decoder; park what
    cannot be read (whole, or the bad items of a message whose good items are kept) on the
    dead-letter topic, count it, log it, and go on.

    Without a producer nothing is sent (a read-only replay): the letters only reach
    ``listener``, which every letter also reaches when there is a producer."""

    def __init__(self, group: str, producer: Producer | None = None, topic: str = "",
                 listener: Callable[[DeadLetter], None] | None = None) -> None:
        self.group = group
        self._producer = producer
        self._topic = topic
        self._listener = listener
        self._unflushed = False
        self.stats = DeadLetterStats()

    def read(self, msg: Message, decode: Callable[[bytes | None], T]) -> T | DeadLetter:
        """The decoded value of a message of one item, or the dead letter it became."""
        try:
            return decode(msg.value)
        except DecodeError as exc:
            return self._unreadable(msg, str(exc))
        except Exception as exc:  # a decoder's bug: it must not stop the consumer either
            if self.stats.unreadable < 5:
                log.exception("%s: decoding %s[%d]@%d failed unexpectedly", self.group,
                              msg.topic, msg.partition, msg.offset)
            return self._unreadable(msg, f"{type(exc).__name__}: {exc}")

    def read_items(self, msg: Message,
                   decode: Callable[[bytes | None], Decoded[S]]) -> Decoded[S] | DeadLetter:
        """The good items of a message of several (its bad ones parked), or the dead letter it
        became when it could not be read at all."""
        decoded = self.read(msg, decode)
        if isinstance(decoded, Decoded) and decoded.bad:
            kept, bad = len(decoded.items), decoded.bad_count
            self.stats.bad_items += bad
            first = decoded.bad[0]
            self.park(msg, f"{bad} bad item(s), {kept} kept; item {first.index}: {first.reason}",
                      decoded.bad, kept)
        return decoded

    def _unreadable(self, msg: Message, reason: str) -> DeadLetter:
        self.stats.unreadable += 1
        return self.park(msg, reason)

    def park(self, msg: Message, reason: str, items: Sequence[BadItem] = (),
             kept: int = 0) -> DeadLetter:
        """Write the dead letter of ``msg``; raises BusError when the bus refuses it (the
        message must then not be committed)."""
        letter = letter_for(msg, reason, self.group, items, kept)
        s = self.stats
        s.parked += 1
        s.by_topic[msg.topic] = count = s.by_topic.get(msg.topic, 0) + 1
        s.last = letter.summary()
        if count <= 5 or count % 1000 == 0:
            log.warning("%s: dead letter #%d from %s", self.group, count, s.last)
        if self._producer is not None:
            self._producer.send(self._topic, encode_dead_letter(letter), key=msg.key)
            self._unflushed = True
        if self._listener is not None:
            self._listener(letter)
        return letter

    def flush(self) -> None:
        """Make the letters parked so far durable (before committing what they stand for)."""
        if self._producer is not None and self._unflushed:
            self._producer.flush()
            self._unflushed = False


def _cut(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else reason[:MAX_REASON - 1] + "…"
