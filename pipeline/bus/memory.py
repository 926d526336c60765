"""The in-process bus, the embedded default: partitioned logs and consumer groups in memory.

It is bounded: when the slowest group lags ``capacity`` messages behind on a partition, ``send``
blocks (backpressure is real) and raises :class:`~pipeline.errors.BusError` after
``max_block_s``. Uncommitted messages are redelivered to the group after a rebalance, exactly as
Kafka would.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.bus.acks import AckClock
from pipeline.bus.base import Message
from pipeline.errors import BusError


def partition_for(key: bytes | None, partitions: int, counter: int) -> int:
    """Keyed messages go by a stable hash of the key; unkeyed ones round-robin."""
    if key is None:
        return counter % partitions
    return zlib.crc32(key) % partitions


@dataclass
class _Partition:
    base: int = 0  # offset of log[0]
    log: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.base + len(self.log)


@dataclass
class _Group:
    members: list[MemoryConsumer] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    topics: set[str] = field(default_factory=set)


class MemoryBus:
    """The in-process bus: partitioned logs, consumer groups, bounded by ``capacity``."""

    def __init__(self, partitions: int = 4, capacity: int = 10_000, max_block_s: float = 30.0):
        self.partitions = partitions
        self.capacity = capacity
        self.max_block_s = max_block_s
        self._cond = threading.Condition()
        self._topics: dict[str, list[_Partition]] = {}
        self._groups: dict[str, _Group] = {}
        self._rr = 0
        self.dropped = 0

    def ensure_topics(self, topics: Sequence[str]) -> None:
        with self._cond:
            for t in topics:
                self._topic(t)

    def _topic(self, topic: str) -> list[_Partition]:
        parts = self._topics.get(topic)
        if parts is None:
            parts = self._topics[topic] = [_Partition() for _ in range(self.partitions)]
        return parts

    def producer(self) -> MemoryProducer:
        return MemoryProducer(self)

    def consumer(self, topics: Sequence[str], group: str) -> MemoryConsumer:
        return MemoryConsumer(self, tuple(topics), group)

    def close(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # -- internals, called with the lock held -------------------------------------------------

    def _floor(self, topic: str, pid: int) -> int | None:
        """The lowest committed offset of any group reading ``topic`` (None: nobody reads it)."""
        floors = [g.committed.get((topic, pid), self._topics[topic][pid].base)
                  for g in self._groups.values() if topic in g.topics]
        return min(floors) if floors else None

    def _append(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        parts = self._topic(topic)
        self._rr += 1
        pid = partition_for(key, len(parts), self._rr)
        part = parts[pid]
        deadline = time.monotonic() + self.max_block_s
        while True:
            floor = self._floor(topic, pid)
            if floor is not None and floor > part.base:  # trim what every group has committed
                del part.log[: floor - part.base]
                part.base = floor
            if len(part.log) < self.capacity:
                break
            if floor is None:  # nobody reads this topic: keep the newest `capacity` messages
                del part.log[0]
                part.base += 1
                self.dropped += 1
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise BusError(f"{topic}[{pid}]: consumers are {len(part.log)} messages behind "
                               f"for {self.max_block_s:.0f} s; producer gave up")
            self._cond.wait(left)
        part.log.append((key, value))
        self._cond.notify_all()

    def _rebalance(self, group: _Group) -> None:
        assignments: list[list[tuple[str, int]]] = [[] for _ in group.members]
        pairs = [(t, p) for t in sorted(group.topics) for p in range(len(self._topic(t)))]
        for i, tp in enumerate(pairs):
            if group.members:
                assignments[i % len(group.members)].append(tp)
        for member, assigned in zip(group.members, assignments, strict=True):
            member._assign(assigned, group.committed)


class MemoryProducer:
    def __init__(self, bus: MemoryBus) -> None:
        self._bus = bus
        self._acks = AckClock()

    def send(self, topic: str, value: bytes | None, key: bytes | None = None) -> None:
        self._acks.on_send()
        try:
            with self._bus._cond:
                self._bus._append(topic, key, value)
        except BusError as exc:  # backpressure held it past max_block_s
            self._acks.on_error(exc)
            raise
        self._acks.on_ack()  # in the log once appended

    def health(self) -> dict[str, Any]:
        """Sends are synchronous: nothing is pending once ``send`` returns."""
        return self._acks.health()

    def flush(self, timeout_s: float | None = None) -> None:
        """Sends are synchronous; nothing is ever pending."""

    def close(self) -> None:
        """Nothing to release."""


class MemoryConsumer:
    """A group member; partitions are shared round-robin among a group's members."""

    def __init__(self, bus: MemoryBus, topics: tuple[str, ...], group: str) -> None:
        self._bus = bus
        self._group_name = group
        self._positions: dict[tuple[str, int], int] = {}
        self._closed = False
        with bus._cond:
            g = bus._groups.setdefault(group, _Group())
            for t in topics:
                bus._topic(t)
                g.topics.add(t)
            g.members.append(self)
            bus._rebalance(g)

    def _assign(self, assigned: list[tuple[str, int]],
                committed: dict[tuple[str, int], int]) -> None:
        self._positions = {
            tp: committed.get(tp, self._bus._topics[tp[0]][tp[1]].base) for tp in assigned
        }

    def poll(self, timeout_s: float, max_records: int = 500) -> list[Message]:
        bus = self._bus
        deadline = time.monotonic() + timeout_s
        with bus._cond:
            while not self._closed:
                out: list[Message] = []
                for (topic, pid), position in self._positions.items():
                    part = bus._topics[topic][pid]
                    pos = max(position, part.base)
                    take = part.log[pos - part.base: pos - part.base + max_records - len(out)]
                    out.extend(Message(topic, pid, pos + i, k, v) for i, (k, v) in enumerate(take))
                    self._positions[(topic, pid)] = pos + len(take)
                    if len(out) >= max_records:
                        break
                if out:
                    return out
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                bus._cond.wait(left)
        return []

    def lag(self) -> dict[tuple[str, int], int]:
        """Per assigned partition, the messages past this member's position (for metrics)."""
        with self._bus._cond:
            if self._closed:
                return {}
            return {tp: max(0, self._bus._topics[tp[0]][tp[1]].end - pos)
                    for tp, pos in self._positions.items()}

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        with self._bus._cond:
            group = self._bus._groups[self._group_name]
            group.committed.update(self._positions if offsets is None else offsets)
            self._bus._cond.notify_all()

    def close(self) -> None:
        with self._bus._cond:
            if self._closed:
                return
            self._closed = True
            group = self._bus._groups[self._group_name]
            group.members.remove(self)
            self._bus._rebalance(group)
            self._bus._cond.notify_all()
