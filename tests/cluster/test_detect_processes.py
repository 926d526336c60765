"""Detection partitioned across processes on the Kafka cluster: two ``rocewatch run --role
detect`` workers (``detection.mode: partitioned``) share the samples partitions and publish
symptoms; two ``--role correlate`` processes share the ``correlator`` lease in ZooKeeper, one
correlating, one standing by (detectors.partition).

A known stream with three faults (tests/detectors/partitioned_stream.py) is produced; a third
of the way in the correlator holding the lease is killed with SIGKILL, later one of the two
workers. Against the one-process chain on the same samples, the distinct root-cause incidents
(by fingerprint) that reach the alerts topic: none lost, none more; and the same ones still
firing at the end (the resolutions arrived too). Printed: the correlator's
hand-over (kill → the standby holds the lease → its first alerts on the topic) and the worker's
(kill → every device it judged is judged again by the other).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kafka import KafkaConsumer as RawConsumer
from kafka.errors import KafkaError
from kafka.structs import TopicPartition

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from pipeline.bus.kafka import KafkaBus, client_config
from pipeline.config import BusSettings
from pipeline.model import Alert
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.publish import publish_batches
from pipeline.wire.symptoms import decode_report
from tests.cluster.known_set import wait_for
from tests.cluster.roles import Deployment, RoleProcess, holders, pid_of
from tests.detectors.partitioned_stream import (
    EXPECTED,
    firing_at_end,
    root_causes,
    ticks,
    topology,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: wall seconds between two ticks of the stream (one sample interval of event time each)
PACE_S = 0.4
KILL_CORRELATOR_AT = 14  # after two incidents fired, before the link corrupts
KILL_WORKER_AT = 30
#: a probe's poll that has not returned for this long is given up (see Probe)
STUCK_S = 10.0


class Probe:
    """Reads a topic from the start, noting when each message was produced (its broker
    timestamp, wall clock). It reads without a group (every partition assigned, nothing
    committed); a reader whose poll has not returned for :data:`STUCK_S` is given up and
    the topic read again by a new client (a kafka-python 3.0 consumer was seen
    to wait forever inside one poll now and then): each message is noted once."""

    def __init__(self, roles: Deployment, topic: str) -> None:
        self.settings = BusSettings.model_validate(roles.config["bus"])
        bus = KafkaBus(self.settings)
        bus.ensure_topics([topic])
        bus.close()
        self.topic = topic
        self.seen: list[tuple[float, bytes | None]] = []
        self.readers = 0
        self._noted: set[tuple[int, int]] = set()
        self._lock = threading.Lock()
        self.done = threading.Event()
        self._last = time.monotonic()
        self._thread = self._start()

    def _start(self) -> threading.Thread:
        self.readers += 1
        self._last = time.monotonic()
        thread = threading.Thread(target=self._read, args=(self.readers,), daemon=True)
        thread.start()
        return thread

    def _read(self, reader: int) -> None:
        consumer = RawConsumer(**client_config(self.settings), group_id=None,
                               enable_auto_commit=False)
        try:
            parts = sorted(consumer.partitions_for_topic(self.topic) or ())
            consumer.assign([TopicPartition(self.topic, p) for p in parts])
            consumer.seek_to_beginning()
            while not self.done.is_set() and reader == self.readers:
                got = consumer.poll(timeout_ms=200, max_records=5000)
                with self._lock:
                    self._last = time.monotonic()
                    for tp, records in got.items():
                        for r in records:
                            if (tp.partition, r.offset) not in self._noted:
                                self._noted.add((tp.partition, r.offset))
                                self.seen.append((r.timestamp / 1000, r.value))
        finally:
            consumer.close()

    def check(self) -> None:
        """Start a new reader when this one has not returned from a poll for STUCK_S."""
        if time.monotonic() - self._last > STUCK_S:
            self._thread = self._start()

    def close(self) -> None:
        self.done.set()
        self._thread.join(10)


def messages(probe: Probe) -> list[tuple[float, bytes | None]]:
    """What the probe has read so far, in the order produced."""
    probe.check()
    with probe._lock:
        return sorted(probe.seen, key=lambda m: m[0])


def alerts_of(probe: Probe, after: float = 0.0) -> list[Alert]:
    return [a for t, v in messages(probe) if t >= after for a in decode_alerts(v).items]


def members(roles: Deployment, group: str) -> int:
    bus = KafkaBus(BusSettings.model_validate(roles.config["bus"]))
    name = roles.config["bus"]["kafka"]["group_prefix"] + group
    try:
        return len(bus._admin_client().describe_groups([name]).get(name, {}).get("members", []))
    except KafkaError:  # no coordinator for the group yet
        return 0
    finally:
        bus.close()


def leader(procs: list[RoleProcess]) -> RoleProcess | None:
    return next((p for p in procs if p.alive and p.value("rocewatch_lease_leader") == 1.0), None)


def test_partitioned_detection_survives_the_correlator_and_a_worker_killed(
        roles: Deployment, tmp_path: Any) -> None:
    topo = topology()
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(topo.to_json()))
    roles.config.update(topology=str(path), detection={"mode": "partitioned"})
    KafkaBus(BusSettings.model_validate(roles.config["bus"])).ensure_topics(roles.topics.all())
    alerts = Probe(roles, roles.topics.alerts)
    reports = Probe(roles, roles.topics.symptoms)
    correlators = [roles.start("correlate") for _ in range(2)]
    first = wait_for(lambda: leader(correlators), 90, "a correlator to take the lease")
    workers = [roles.start("detect") for _ in range(2)]
    wait_for(lambda: members(roles, "detect") == 2, 90, "two detect workers in the group")

    stream = ticks(topo)
    moments: dict[str, float] = {}
    bus = KafkaBus(BusSettings.model_validate(roles.config["bus"]))
    producer = bus.producer()
    for k, batches in enumerate(stream):
        if k == KILL_CORRELATOR_AT:
            producer.flush(30)
            wait_for(lambda: len(root_causes(alerts_of(alerts))) >= 2, 60,
                     "two incidents before the correlator is killed")
            first.kill()
            moments["correlator killed"] = time.time()
        if k == KILL_WORKER_AT:
            victim = workers[0]
            victim.kill()
            moments["worker killed"] = time.time()
        publish_batches(producer, roles.topics, batches)
        producer.flush(30)
        time.sleep(PACE_S)  # pacing the stream, not a synchronisation
        if "correlator killed" in moments:
            _note_take_over(correlators, moments)
    producer.close()
    bus.close()

    chain = DetectionChain(DetectionSettings(), topo)
    changes = [a for batches in stream for a in chain.observe(batches)]
    reference, at_end = root_causes(changes), firing_at_end(changes)
    assert {(n, e) for n, e, _ in reference} == EXPECTED
    wait_for(lambda: root_causes(alerts_of(alerts)) >= reference and
             firing_at_end(alerts_of(alerts)) == at_end, 90,
             "every incident on the alerts topic, and the resolved ones resolved")
    wait_for(lambda: _note_take_over(correlators, moments), 60, "the standby to correlate")
    second = leader(correlators)
    found = root_causes(alerts_of(alerts))
    killed = moments["correlator killed"]
    after = [t for t, _ in messages(alerts) if t > killed]
    # the killed worker's partitions move once the group's session times out (10 s), which may
    # be after the stream ended: the survivor then judges their uncommitted samples
    wait_for(lambda: _handed_over(_owners(reports, moments["worker killed"])), 90,
             "the surviving worker to judge every device the killed one judged")
    owned = _owners(reports, moments["worker killed"])
    alerts.close()
    reports.close()
    lost, extra = reference - found, found - reference
    firing = [a for a in alerts_of(alerts) if a.root_cause and a.ends_ns is None]
    print(f"\npartitioned detection, 2 workers + 2 correlators: {len(found)} incidents of "
          f"{len(reference)}, lost {len(lost)}, doubled {len(extra)}; correlator killed "
          f"(SIGKILL) at tick {KILL_CORRELATOR_AT}: the standby held the lease "
          f"{moments['lease taken'] - killed:.1f}s later, correlated "
          f"{moments['correlating'] - killed:.1f}s later, its first alerts "
          f"{after[0] - killed:.1f}s later; {len(firing)} firing/updated incident messages "
          f"in all; worker killed at tick {KILL_WORKER_AT}: {owned}; the probes read the topics "
          f"{alerts.readers + reports.readers - 2} time(s) again after a stuck poll")
    assert (lost, extra) == (set(), set())
    assert second is not None and second is not first and "lease taken" in moments
    assert pid_of(holders(roles.coordination["zookeeper"],
                          f"{roles.coordination['root']}/lab/lease-correlator")[0]) == second.pid
    assert _handed_over(owned)


def _handed_over(owned: dict[str, Any]) -> bool:
    return bool(owned["devices"]) and owned["judged again"] == owned["devices"]


def _note_take_over(correlators: list[RoleProcess], moments: dict[str, float]) -> bool:
    """Note when a survivor holds the lease, and when it has made its first step."""
    now, holder = time.time(), leader(correlators)
    if holder is None:
        return False
    moments.setdefault("lease taken", now)
    if (holder.value("rocewatch_correlate_steps_total") or 0.0) > 0:
        moments.setdefault("correlating", now)
    return "correlating" in moments


def _owners(probe: Probe, killed: float) -> dict[str, Any]:
    """The devices the killed worker judged last, and how long after the kill each was judged
    again by another worker."""
    last: dict[str, str] = {}
    again: dict[str, float] = {}
    dead: str | None = None
    for t, value in messages(probe):
        report = decode_report(value).items
        if t <= killed:
            for d in report.judged:
                last[d] = report.worker
            continue
        if dead is None:
            dead = next((w for w in set(last.values())
                         if all(r != w for r in _workers_after(probe, killed))), None)
        for d in report.judged:
            if report.worker != dead and last.get(d) == dead:
                again.setdefault(d, t - killed)
    devices = sorted(d for d, w in last.items() if w == dead)
    return {"devices": devices, "judged again": sorted(again),
            "after_s": round(max(again.values(), default=float("nan")), 1)}


def _workers_after(probe: Probe, killed: float) -> set[str]:
    return {decode_report(v).items.worker for t, v in messages(probe) if t > killed + 1.0}
