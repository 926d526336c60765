"""The bus: its interface and the topic names every stage uses.

The interface is Kafka's shape, small: producers send ``(topic, key, value)`` bytes; consumers in a
group poll messages from the partitions assigned to them and commit only what they have finished
with. Messages with the same key land in the same partition, so a device's order holds. A value
may be None (a Kafka tombstone): the codecs of :mod:`pipeline.wire` refuse it like any other
unreadable value. The implementations are :mod:`pipeline.bus.memory` (the embedded default) and
:mod:`pipeline.bus.kafka`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    #: None for a tombstone (a Kafka record with a null value)
    value: bytes | None


@dataclass(frozen=True)
class Topics:
    """The platform's topic names (one prefix for all)."""

    prefix: str = "rocewatch."

    @property
    def samples(self) -> str:
        return self.prefix + "samples"

    @property
    def alerts(self) -> str:
        return self.prefix + "alerts"

    @property
    def actions(self) -> str:
        return self.prefix + "actions"

    @property
    def deadletter(self) -> str:
        """What consumers could not read, with its origin and why (``pipeline.wire.deadletter``)."""
        return self.prefix + "deadletter"

    @property
    def commands(self) -> str:
        """Approvals, repairs, silences entered by people (``pipeline.wire.commands``)."""
        return self.prefix + "commands"

    @property
    def neighbors(self) -> str:
        """What devices say over LLDP (``pipeline.wire.neighbors``)."""
        return self.prefix + "neighbors"

    @property
    def symptoms(self) -> str:
        """What partitioned detect workers found, for the correlator (``pipeline.wire.symptoms``).
        """
        return self.prefix + "symptoms"

    def all(self) -> tuple[str, ...]:
        return (self.samples, self.alerts, self.actions, self.deadletter, self.commands,
                self.neighbors, self.symptoms)


class Producer(Protocol):
    def send(self, topic: str, value: bytes | None, key: bytes | None = None) -> None:
        """Queue a message; may block under backpressure."""

    def flush(self, timeout_s: float | None = None) -> None:
        """Block until every queued message is acknowledged."""

    def health(self) -> dict[str, Any]:
        """What the transport has acknowledged so far and how long the rest has waited
        (:meth:`pipeline.bus.acks.AckClock.health`)."""

    def close(self) -> None: ...


class Consumer(Protocol):
    def poll(self, timeout_s: float, max_records: int = 500) -> list[Message]:
        """Up to ``max_records`` messages, waiting at most ``timeout_s`` for the first."""

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Mark every message returned by ``poll`` so far as done for the group; or, given
        ``offsets`` (``(topic, partition)`` → the next offset to read), only up to those."""

    def close(self) -> None: ...


class Bus(Protocol):
    def ensure_topics(self, topics: Sequence[str]) -> None: ...

    def producer(self) -> Producer: ...

    def consumer(self, topics: Sequence[str], group: str) -> Consumer: ...

    def close(self) -> None: ...
