"""The bus on Apache Kafka, through kafka-python: topics, keyed producers, consumer groups.

* Topics are created with the admin client, with the partitions and replication of the config.
* Producers send acks=all with idempotence, batch (``linger_ms``, ``batch_bytes``) and compress
  (lz4 by default). A send that fails later, in the background, is remembered and raised by the
  next :meth:`KafkaProducer.flush`, so a caller that flushes before it commits never commits past
  a lost message. :meth:`KafkaProducer.health` says how far the brokers are behind it: messages
  not yet acknowledged, how long they have waited for an ack (a stall: a broker died and its
  partitions have no leader yet, or every broker is away), the longest stall so far.
* Every client retries a broker that is down at most ``reconnect_backoff_max_ms`` apart (1 s), so
  it is back within about that once the broker is: kafka-python's own 30 s kept a producer
  20-30 s past a restarted broker's return.
* Consumers join a group with auto-commit off; :meth:`KafkaConsumer.commit` commits the positions
  of what ``poll`` returned, and callers commit only once the store has it. On a rebalance the
  partitions that move are picked up by their new owner from the last commit: work that was
  polled but not committed is done again, never lost, and the store collapses the repeat. A commit
  that the group refuses because it rebalanced meanwhile raises :class:`~pipeline.errors.BusError`
  and loses nothing for the same reason.

* A consumer's poll runs on a daemon thread of the consumer's own and is given up
  ``poll_deadline_ms`` past its timeout: kafka-python 3.0.12's poll was seen never to return (its
  IO thread left the call's waiter unanswered). The stuck member is closed, which makes it leave
  the group, a new one joins in its place, and the poll raises
  :class:`~pipeline.errors.BusError`; what it had not committed is read again by whoever owns
  those partitions next. The thread is a daemon (:mod:`pipeline.bus.caller`): a stuck poll never
  holds the process at exit.

kafka-python blocks 30 s in a client's constructor when no broker answers; ``bootstrap_timeout_ms``
bounds that, and every failure surfaces as :class:`~pipeline.errors.BusError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaAdminClient
from kafka import KafkaConsumer as _KafkaConsumer
from kafka import KafkaProducer as _KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition

from pipeline.bus.acks import AckClock, reason
from pipeline.bus.base import Message
from pipeline.bus.caller import DaemonCaller
from pipeline.config import BusSettings
from pipeline.errors import BusError

log = logging.getLogger("rocewatch.bus")


def client_config(settings: BusSettings) -> dict[str, Any]:
    """The connection settings every kafka-python client of the bus is made with."""
    k = settings.kafka
    config: dict[str, Any] = {
        "bootstrap_servers": [s.strip() for s in k.bootstrap.split(",") if s.strip()],
        "client_id": k.client_id,
        "security_protocol": k.security_protocol,
        "request_timeout_ms": k.request_timeout_ms,
        "bootstrap_timeout_ms": k.bootstrap_timeout_ms,
        "reconnect_backoff_max_ms": k.reconnect_backoff_max_ms,
    }
    if k.security_protocol.startswith("SASL"):
        config.update(sasl_mechanism="PLAIN", sasl_plain_username=k.sasl_username,
                      sasl_plain_password=k.sasl_password.get_secret_value())
    return config


class KafkaBus:
    """A :class:`pipeline.bus.base.Bus` on a Kafka cluster."""

    def __init__(self, settings: BusSettings) -> None:
        self.settings = settings
        self._admin: Any = None
        self._lock = threading.Lock()
        self._known: set[str] = set()
        #: the partitions of each topic ensured, as the cluster described them
        self._partitions: dict[str, int] = {}

    def _admin_client(self) -> Any:
        if self._admin is None:
            try:
                self._admin = KafkaAdminClient(**client_config(self.settings))
            except (KafkaError, OSError) as exc:
                raise BusError(f"Kafka at {self.settings.kafka.bootstrap}: "
                               f"{reason(exc)}") from exc
        return self._admin

    def ensure_topics(self, topics: Sequence[str]) -> None:
        """Create the topics that do not exist yet and wait until each has a leader."""
        k = self.settings.kafka
        with self._lock:
            missing = [t for t in dict.fromkeys(topics) if t not in self._known]
            if not missing:
                return
            admin = self._admin_client()
            try:
                existing = set(admin.list_topics())
                new = [t for t in missing if t not in existing]
                if new:
                    admin.create_topics(
                        {t: {"num_partitions": k.partitions, "replication_factor": k.replication}
                         for t in new}, raise_errors=False)
                admin.wait_for_topics(missing, timeout_ms=30_000)
                described = admin.describe_topics(topics=missing)
            except (KafkaError, OSError) as exc:
                raise BusError(f"cannot create topics {', '.join(missing)} on "
                               f"{k.bootstrap}: {reason(exc)}") from exc
            self._partitions.update((str(t["name"]), len(t.get("partitions") or ()))
                                    for t in described)
            self._known.update(missing)

    def producer(self) -> KafkaProducer:
        return KafkaProducer(self.settings)

    def consumer(self, topics: Sequence[str], group: str) -> KafkaConsumer:
        with self._lock:
            expected = {t: self._partitions[t] for t in topics if t in self._partitions}
        return KafkaConsumer(self.settings, tuple(topics), self.settings.kafka.group_prefix + group,
                             expected)

    def close(self) -> None:
        with self._lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None


class KafkaProducer:
    """Keyed, batched, compressed, acks=all with idempotence."""

    def __init__(self, settings: BusSettings) -> None:
        k = settings.kafka
        self._bootstrap = k.bootstrap
        self._failed: BaseException | None = None
        self._failures = 0
        self._lock = threading.Lock()
        self.acks = AckClock()
        try:
            self._producer = _KafkaProducer(
                **client_config(settings),
                acks="all", enable_idempotence=True,
                compression_type=None if k.compression == "none" else k.compression,
                linger_ms=k.linger_ms, batch_size=k.batch_bytes,
                max_request_size=max(k.max_message_bytes, k.batch_bytes),
                # a broker that restarts must not lose or reorder a device's messages
                max_in_flight_requests_per_connection=5, delivery_timeout_ms=120_000,
                allow_auto_create_topics=False,
            )
        except (KafkaError, OSError) as exc:
            raise BusError(f"Kafka producer at {k.bootstrap}: {reason(exc)}") from exc

    def _on_error(self, exc: BaseException) -> None:
        with self._lock:
            self._failures += 1
            if self._failed is None:
                self._failed = exc

    def send(self, topic: str, value: bytes | None, key: bytes | None = None) -> None:
        try:
            future = self._producer.send(topic, value=value, key=key)
        except (KafkaError, AssertionError, OSError) as exc:
            raise BusError(f"cannot send to {topic} on {self._bootstrap}: {reason(exc)}") from exc
        self.acks.on_send()
        future.add_callback(self.acks.on_ack)
        future.add_errback(self._on_error)
        future.add_errback(self.acks.on_error)

    def health(self) -> dict[str, Any]:
        """What the brokers have acknowledged (:meth:`pipeline.bus.acks.AckClock.health`)."""
        return self.acks.health()

    def flush(self, timeout_s: float | None = None) -> None:
        """Wait until everything sent is acknowledged; raise if anything since the last flush
        was not (its callers must not commit what depended on it)."""
        try:
            self._producer.flush(timeout=timeout_s)
        except (KafkaError, OSError) as exc:
            raise BusError(f"flushing to {self._bootstrap}: {reason(exc)}") from exc
        with self._lock:
            failed, failures, self._failed, self._failures = self._failed, self._failures, None, 0
        if failed is not None:
            raise BusError(f"{failures} message(s) to {self._bootstrap} were not delivered: "
                           f"{reason(failed)}")

    def close(self) -> None:
        self._producer.close(timeout=30)


class Rebalances(ConsumerRebalanceListener):  # type: ignore[misc]
    """Counts the group's rebalances and logs what moved. Nothing needs doing on a revoke: work
    polled but not committed is redone by the partition's next owner, and the store collapses it."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.revoked = 0
        self.assigned: list[tuple[str, int]] = []

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.revoked += 1
        if revoked:
            log.info("%s: partitions revoked %s", self.group, _tps(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.assigned = sorted((tp.topic, tp.partition) for tp in assigned)
        log.info("%s: partitions assigned %s", self.group, _tps(assigned))

    def on_partitions_lost(self, lost: Any) -> None:
        self.revoked += 1
        log.warning("%s: partitions lost %s", self.group, _tps(lost))


def _tps(tps: Any) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(tps)) or "none"


class KafkaConsumer:
    """One member of a consumer group; commits only when told to."""

    def __init__(self, settings: BusSettings, topics: tuple[str, ...], group_id: str,
                 partitions: Mapping[str, int] | None = None) -> None:
        k = settings.kafka
        self.group_id = group_id
        self._settings = settings
        self._topics = topics
        self._expected = dict(partitions or {})
        self._bootstrap = k.bootstrap
        self._commit_timeout_ms = k.commit_timeout_ms
        self._poll_deadline_s = k.poll_deadline_ms / 1000
        self.rebalances = Rebalances(group_id)
        self._lag: dict[tuple[str, int], int] = {}
        #: members given up because a poll did not return (each replaced by a new one)
        self.replaced = 0
        self._poller = DaemonCaller(f"poll-{group_id}")
        self._consumer: Any = self._join()

    def _join(self) -> Any:
        """A new member of the group, subscribed once it knows every partition."""
        k = self._settings.kafka
        try:
            consumer = _KafkaConsumer(
                **client_config(self._settings),
                group_id=self.group_id, enable_auto_commit=False, auto_offset_reset="earliest",
                max_partition_fetch_bytes=k.max_partition_fetch_bytes,
                fetch_max_bytes=k.fetch_max_bytes,
                session_timeout_ms=k.session_timeout_ms,
                heartbeat_interval_ms=k.heartbeat_interval_ms,
                max_poll_interval_ms=k.max_poll_interval_ms,
                check_crcs=k.check_crcs, allow_auto_create_topics=False,
                metadata_max_age_ms=k.metadata_max_age_ms,
            )
            self._know_partitions(consumer, self._topics, self._expected,
                                  k.bootstrap_timeout_ms / 1000)
            consumer.subscribe(list(self._topics), listener=self.rebalances)
        except (KafkaError, OSError) as exc:
            raise BusError(f"Kafka consumer {self.group_id} at {k.bootstrap}: "
                           f"{reason(exc)}") from exc
        return consumer

    def _know_partitions(self, consumer: Any, topics: Sequence[str],
                         expected: Mapping[str, int], within_s: float) -> None:
        """Know the topics' partitions before joining: a group leader that assigns without some
        of them gives nobody those partitions until its next metadata refresh. The broker that
        answers may not know a topic just created on another yet, or only part of it: its
        metadata is read again until it has every partition the cluster described (``expected``,
        when the bus created or checked the topic), for at most ``within_s``."""
        deadline = time.monotonic() + within_s
        for topic in topics:
            while len(consumer.partitions_for_topic(topic) or ()) < expected.get(topic, 1):
                if time.monotonic() >= deadline:
                    log.warning("%s: the metadata of %s still lacks partitions; joining anyway "
                                "(they are read after the next metadata refresh)",
                                self.group_id, topic)
                    return
                consumer.topics()  # a fresh metadata request
                time.sleep(0.1)

    def poll(self, timeout_s: float, max_records: int = 500) -> list[Message]:
        """What the group gives this member within ``timeout_s``. A poll that has not returned
        ``poll_deadline_ms`` later is given up: the member is replaced and BusError raised."""
        if self._consumer is None:  # the last one was given up and its successor not made
            self._consumer = self._join()
        consumer = self._consumer
        wait_ms = max(0, int(timeout_s * 1000))
        pending = self._poller.submit(consumer.poll, timeout_ms=wait_ms, max_records=max_records)
        try:
            records = pending.result(timeout=wait_ms / 1000 + self._poll_deadline_s)
        except FutureTimeout:
            self._give_up(consumer, wait_ms / 1000 + self._poll_deadline_s)
            raise BusError(f"polling {self.group_id} on {self._bootstrap}: the poll did not "
                           f"return in {wait_ms / 1000 + self._poll_deadline_s:.0f} s; the "
                           f"member was replaced (nothing is lost: what it had not committed "
                           f"is read again)") from None
        except (KafkaError, OSError) as exc:
            raise BusError(f"polling {self.group_id} on {self._bootstrap}: {reason(exc)}") from exc
        out: list[Message] = []
        for tp, batch in records.items():
            out.extend(Message(tp.topic, tp.partition, r.offset, r.key, r.value) for r in batch)
        self._note_lag()
        return out

    def _give_up(self, stuck: Any, waited_s: float) -> None:
        """Close a member whose poll is stuck (closing makes it leave the group, and answers the
        poll's waiter with an error, which ends its thread) and join a new one in its place."""
        self.replaced += 1
        log.error("%s: a poll has not returned in %.0f s (kafka-python); closing that member and "
                  "joining a new one (%d replaced so far)", self.group_id, waited_s, self.replaced)
        self._poller.shutdown()
        self._poller = DaemonCaller(f"poll-{self.group_id}")
        closer = threading.Thread(target=self._close_quietly, args=(stuck,), daemon=True,
                                  name=f"close-{self.group_id}")
        closer.start()
        closer.join(timeout=10)
        self._consumer = None
        self._lag = {}
        self._consumer = self._join()

    def _close_quietly(self, consumer: Any) -> None:
        try:
            consumer.close(autocommit=False)
        except Exception as exc:  # closing must not fail: say what happened and go on
            log.warning("closing consumer %s: %s", self.group_id, reason(exc))

    def _note_lag(self) -> None:
        """What each assigned partition holds past our position, as the last fetch saw its end
        (kept for :meth:`lag`: the client is not to be touched from another thread)."""
        lag: dict[tuple[str, int], int] = {}
        if self._consumer is None:
            return
        try:
            for tp in self._consumer.assignment():
                end = self._consumer.highwater(tp)
                if end is not None:
                    lag[(tp.topic, tp.partition)] = max(0, end - self._consumer.position(tp))
        except (KafkaError, OSError, AssertionError):  # mid-rebalance: keep the last reading
            return
        self._lag = lag

    def lag(self) -> dict[tuple[str, int], int]:
        """Per assigned partition, the messages past this member's position (for metrics)."""
        return dict(self._lag)

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Commit the positions of everything ``poll`` returned, or the given next offsets.
        Raises BusError when the group refused (it rebalanced: the next owner of those
        partitions redoes the work) or the broker did not answer in time."""
        explicit = None if offsets is None else {
            TopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)
            for (topic, partition), offset in offsets.items()}
        if self._consumer is None:
            raise BusError(f"commit of {self.group_id} on {self._bootstrap}: the member was "
                           f"replaced; the next owner of its partitions reads them again")
        try:
            self._consumer.commit(explicit, timeout_ms=self._commit_timeout_ms)
        except (KafkaError, OSError) as exc:
            raise BusError(f"commit of {self.group_id} on {self._bootstrap} failed: "
                           f"{reason(exc)}") from exc

    def assignment(self) -> list[tuple[str, int]]:
        """The partitions this member holds now."""
        if self._consumer is None:
            return []
        return sorted((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def close(self) -> None:
        if self._consumer is not None:
            self._close_quietly(self._consumer)
            self._consumer = None
        self._poller.shutdown()
