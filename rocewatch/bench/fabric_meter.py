"""Where the platform's CPU goes, stage by stage, and how far behind the devices each stage is.

Two meters for ``bench fabric``'s platform process, which runs every role on the in-process bus:

* :class:`ThreadCpu` reads every thread's CPU time from ``/proc/self/task`` and books it to the
  stage that owns the thread, by the thread's name (the roles' loops, the collectors' sessions and
  gRPC's threads, ingest's inserters and the engine's own threads, remediation's heartbeats and
  deliveries, the API's server). Threads that ended between two readings, and nameless native
  threads, are reported as such, never guessed.
* :class:`MeteredBus` is the bus the roles are given: the in-process bus itself, with the CPU spent
  inside its calls (send, poll, commit) booked to the bus and taken off the calling thread's stage,
  and the samples topic's messages followed from their publication to their commit by each
  consumer group (ingest commits once the store has a message: that is *stored*).

Encoding a batch for the bus is counted with its producer (collect) and decoding it with each
consumer (ingest, detect, remediate): the in-process bus moves bytes and does nothing else.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.bus.base import Consumer, Message, Producer
from pipeline.bus.memory import partition_for
from pipeline.errors import DecodeError
from pipeline.wire.samples import decode_samples

STAGES = ("collect", "bus", "ingest+store", "detect", "remediate", "api")
#: thread name prefixes (Python's names, else the OS's) → stage; first match wins
OWNERS: tuple[tuple[str, str], ...] = (
    ("bench-", "bench"),
    ("rocewatch-collect", "collect"), ("collector-", "collect"), ("gnmi-", "collect"),
    ("snmp-", "collect"), ("asyncio_", "collect"), ("grpc_", "collect"),
    ("event_engine", "collect"), ("lifeguard", "collect"), ("Thread-", "collect"),
    ("rocewatch-ingest", "ingest+store"), ("rocewatch-insert", "ingest+store"),
    ("APScheduler", "ingest+store"), ("ThreadPoolExecutor-", "ingest+store"),
    ("rocewatch-detect", "detect"),
    ("rocewatch-remediate", "remediate"), ("rw-", "remediate"),
    ("rocewatch-api", "api"), ("AnyIO worker", "api"),
    ("rocewatch-watchdog", "platform"), ("MainThread", "platform"),
)
_TICK = os.sysconf("SC_CLK_TCK")


def owner(name: str, comm: str) -> str:
    """The stage of a thread: by its Python name, else by its OS name (the store engine's
    threads name themselves; an unnamed native thread is ``python``)."""
    for prefix, stage in OWNERS:
        if name.startswith(prefix):
            return stage
    if not name and comm not in ("python", "python3"):
        return "ingest+store"  # chDB's engine threads (inserts, merges; and queries)
    return "unnamed"


def task_cpu(tid: str) -> tuple[str, float] | None:
    """A thread of this process: its OS name and CPU seconds (None once it has ended)."""
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:  # the thread ended meanwhile
        return None
    return comm, (int(fields[11]) + int(fields[12])) / _TICK


def process_cpu() -> float:
    t = os.times()
    return t.user + t.system


@dataclass
class ThreadCpu:
    """CPU seconds per stage since :meth:`start`, read from every thread of this process."""

    bus: MeteredBus | None = None
    _base: dict[int, float] = field(default_factory=dict)
    _last: dict[int, tuple[str, float]] = field(default_factory=dict)
    _process0: float = 0.0

    def start(self) -> None:
        self._base = {tid: cpu for tid, (_, cpu) in self._read().items()}
        self._last = {}
        self._process0 = process_cpu()
        if self.bus is not None:
            self.bus.reset_cpu()

    def _read(self) -> dict[int, tuple[str, float]]:
        names = {t.native_id: t.name for t in threading.enumerate() if t.native_id}
        out: dict[int, tuple[str, float]] = {}
        for tid in os.listdir("/proc/self/task"):
            got = task_cpu(tid)
            if got is not None:
                comm, cpu = got
                out[int(tid)] = (owner(names.get(int(tid), ""), comm), cpu)
        return out

    def read(self) -> dict[str, float]:
        """CPU seconds per stage (and ``bench``, ``platform``, ``unnamed``, ``ended``) since
        :meth:`start`; ``total`` is the whole process's."""
        now = self._read()
        self._last.update(now)
        out: dict[str, float] = {}
        bus_cpu = self.bus.cpu_by_thread() if self.bus is not None else {}
        for tid, (stage, cpu) in self._last.items():
            used = cpu - self._base.get(tid, 0.0)
            inside = min(used, bus_cpu.get(tid, 0.0))
            out[stage] = out.get(stage, 0.0) + used - inside
            out["bus"] = out.get("bus", 0.0) + inside
        total = process_cpu() - self._process0
        out["ended"] = max(0.0, total - sum(out.values()))
        out["total"] = total
        return out


@dataclass
class Sent:
    """One samples message: where and when it was published, and the latest device time in it."""

    offset: int
    wall_ns: int
    value: bytes | None
    device_ns: int = 0
    rows: int = 0


class Followed:
    """The samples topic's messages per partition, from publication to each group's commit.

    The calls made on the roles' threads only append (publication, commit); :meth:`process`,
    called from the benchmark's own thread, reads the device times and pairs them up."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.lock = threading.Lock()
        self.sent: dict[int, deque[Sent]] = {}
        self.next_offset: dict[int, int] = {}
        self.groups = tuple(groups)
        self._commits: list[tuple[str, int, int, int]] = []
        #: group → partition → committed offset (as processed)
        self.committed: dict[str, dict[int, int]] = {g: {} for g in groups}
        #: group → (device ns, commit ns, publication ns, rows) per message; the times on the
        #: monotonic clock but the device's
        self.lags: dict[str, list[tuple[int, int, int, int]]] = {g: [] for g in groups}
        self.undecodable = 0

    def published(self, partition: int, value: bytes | None) -> None:
        """Called with :attr:`lock` held, right after the bus appended the message."""
        offset = self.next_offset.get(partition, 0)
        self.next_offset[partition] = offset + 1
        self.sent.setdefault(partition, deque()).append(Sent(offset, time.monotonic_ns(), value))

    def commit(self, group: str, offsets: Mapping[int, int]) -> None:
        now = time.monotonic_ns()
        with self.lock:
            self._commits.extend((group, pid, off, now) for pid, off in offsets.items())

    def process(self) -> None:
        """Pair the commits made since the last call with the messages they cover."""
        with self.lock:
            commits, self._commits = self._commits, []
            queues = {pid: list(q) for pid, q in self.sent.items()}
        for queue in queues.values():
            for sent in queue:
                if sent.value is not None:
                    self._decode(sent)
        for group, pid, offset, now in commits:
            done = self.committed[group].get(pid, 0)
            queue = queues.get(pid, [])
            first = queue[0].offset if queue else 0
            for sent in queue[max(0, done - first):max(0, offset - first)]:
                self.lags[group].append((sent.device_ns, now, sent.wall_ns, sent.rows))
            self.committed[group][pid] = max(done, offset)
        with self.lock:
            for pid, q in self.sent.items():
                floor = min(self.committed[g].get(pid, 0) for g in self.groups)
                while q and q[0].offset < floor:
                    q.popleft()

    def _decode(self, sent: Sent) -> None:
        try:
            batch = decode_samples(sent.value or b"").items
            sent.device_ns = int(batch.ts_ns.max()) if len(batch) else 0
            sent.rows = len(batch)
        except DecodeError:
            self.undecodable += 1
        sent.value = None

    def stale(self, group: str, older_than_s: float) -> int:
        """Messages published more than ``older_than_s`` ago that ``group`` has not committed
        (as of the last :meth:`process`)."""
        floor = time.monotonic_ns() - int(older_than_s * 1e9)
        with self.lock:
            return sum(1 for pid, q in self.sent.items() for sent in q
                       if sent.offset >= self.committed[group].get(pid, 0)
                       and sent.wall_ns < floor)

    def take_lags(self) -> dict[str, list[tuple[int, int, int, int]]]:
        self.process()
        out, self.lags = self.lags, {g: [] for g in self.groups}
        return out


class MeteredBus:
    """The in-process bus, metered: CPU inside its calls per thread, and the samples topic
    followed for the consumer ``groups`` (see the module doc)."""

    def __init__(self, inner: Any, samples_topic: str, groups: Sequence[str]) -> None:
        self.inner = inner
        self.samples_topic = samples_topic
        self.followed = Followed(groups)
        self._cpu: dict[int, float] = {}
        self._cpu_lock = threading.Lock()

    def charge(self, seconds: float) -> None:
        tid = threading.get_native_id()
        with self._cpu_lock:
            self._cpu[tid] = self._cpu.get(tid, 0.0) + seconds

    def cpu_by_thread(self) -> dict[int, float]:
        with self._cpu_lock:
            return dict(self._cpu)

    def reset_cpu(self) -> None:
        with self._cpu_lock:
            self._cpu = {}

    def ensure_topics(self, topics: Sequence[str]) -> None:
        self.inner.ensure_topics(topics)

    def producer(self) -> Producer:
        return _Producer(self, self.inner.producer())

    def consumer(self, topics: Sequence[str], group: str) -> Consumer:
        return _Consumer(self, self.inner.consumer(topics, group), group)

    def close(self) -> None:
        self.inner.close()


class _Producer:
    def __init__(self, bus: MeteredBus, inner: Producer) -> None:
        self.bus = bus
        self.inner = inner

    def send(self, topic: str, value: bytes | None, key: bytes | None = None) -> None:
        t0 = time.thread_time()
        try:
            if topic == self.bus.samples_topic and key is not None:
                followed = self.bus.followed
                # the offset the bus gives it: keyed messages go by the key's hash, in order
                with followed.lock:
                    self.inner.send(topic, value, key)
                    followed.published(partition_for(key, self.bus.inner.partitions, 0), value)
            else:
                self.inner.send(topic, value, key)
        finally:
            self.bus.charge(time.thread_time() - t0)

    def flush(self, timeout_s: float | None = None) -> None:
        self.inner.flush(timeout_s)

    def health(self) -> dict[str, Any]:
        return self.inner.health()

    def close(self) -> None:
        self.inner.close()


class _Consumer:
    def __init__(self, bus: MeteredBus, inner: Consumer, group: str) -> None:
        self.bus = bus
        self.inner = inner
        self.group = group
        self._polled: dict[int, int] = {}

    def poll(self, timeout_s: float, max_records: int = 500) -> list[Message]:
        t0 = time.thread_time()
        try:
            msgs = self.inner.poll(timeout_s, max_records)
        finally:
            self.bus.charge(time.thread_time() - t0)
        for msg in msgs:
            if msg.topic == self.bus.samples_topic:
                self._polled[msg.partition] = max(self._polled.get(msg.partition, 0),
                                                  msg.offset + 1)
        return msgs

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        t0 = time.thread_time()
        try:
            self.inner.commit(offsets)
        finally:
            self.bus.charge(time.thread_time() - t0)
        if self.group not in self.bus.followed.groups:
            return
        done = (dict(self._polled) if offsets is None else
                {p: o for (t, p), o in offsets.items() if t == self.bus.samples_topic})
        if done:
            self.bus.followed.commit(self.group, done)

    def close(self) -> None:
        self.inner.close()

