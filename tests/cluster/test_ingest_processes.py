"""Ingest run N times: three ``rocewatch run --role ingest`` processes share the samples
partitions of the Kafka cluster (one consumer group) and the store's jobs run in one of them,
the holder of the ``ingest-jobs`` lease in ZooKeeper (:mod:`pipeline.cluster.lease`).

* One of the three is killed with SIGKILL mid-stream and not restarted: the other two take its
  partitions and redo its uncommitted batches; against the known produced set, 0 samples lost
  and 0 doubled through the store's read path.
* The lease's holder is killed with SIGKILL: another process takes the lease once ZooKeeper
  expires the dead one's session and runs the rollup job from there (the buckets of samples
  produced after the kill get rolled); at every moment at most one live process runs it.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from kafka.errors import KafkaError

from pipeline.bus.kafka import KafkaBus
from pipeline.config import BusSettings
from pipeline.wire.publish import publish_batches
from tests.cluster.known_set import keys_of, polls, stored_count, tally, wait_for
from tests.cluster.roles import Deployment, RoleProcess, holders, pid_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def produce(roles: Deployment, batches: list[Any], seconds: float, during: Any = None) -> None:
    bus = KafkaBus(BusSettings.model_validate(roles.config["bus"]))
    producer = bus.producer()
    for i, batch in enumerate(batches):
        if during is not None:
            during(i)
        publish_batches(producer, roles.topics, [batch])
        time.sleep(seconds / len(batches))  # pacing the stream, not a synchronisation
    producer.flush(60)
    producer.close()
    bus.close()


def group_members(roles: Deployment) -> int:
    bus = KafkaBus(BusSettings.model_validate(roles.config["bus"]))
    group = roles.config["bus"]["kafka"]["group_prefix"] + "ingest"
    try:
        found = bus._admin_client().describe_groups([group]).get(group, {})
        return len(found.get("members", []))
    except KafkaError:  # no coordinator for the group yet
        return 0
    finally:
        bus.close()


def three_ingest(roles: Deployment) -> list[RoleProcess]:
    KafkaBus(BusSettings.model_validate(roles.config["bus"])).ensure_topics(roles.topics.all())
    procs = [roles.start("ingest") for _ in range(3)]
    wait_for(lambda: group_members(roles) == 3, 90, "three ingest processes in the group")
    return procs


def lease_path(roles: Deployment) -> str:
    return f"{roles.coordination['root']}/lab/lease-ingest-jobs"


def runs(procs: list[RoleProcess]) -> dict[int, float]:
    """Rollup job runs so far, by pid, of the live processes."""
    return {p.pid: p.value("rocewatch_rollup_runs_total") or 0.0 for p in procs if p.alive}


def test_three_ingest_processes_one_killed_mid_stream_lose_and_double_nothing(
        roles: Deployment) -> None:
    store = roles.store
    procs = three_ingest(roles)
    batches = polls(devices=12, rounds=30)
    produced = keys_of(batches)
    moments: dict[str, float] = {}

    def kill_one(i: int) -> None:
        if i == len(batches) // 3:
            wait_for(lambda: stored_count(store) > 0, 60, "something stored before the kill")
            procs[1].proc.send_signal(signal.SIGKILL)
            procs[1].proc.wait(10)
            moments["kill"] = time.monotonic()

    produce(roles, batches, seconds=8, during=kill_one)
    stored_at_end_of_stream = stored_count(store)
    wait_for(lambda: group_members(roles) == 2, 60, "the group to drop the killed process")
    moments["rebalanced"] = time.monotonic()
    wait_for(lambda: stored_count(store) >= len(produced), 120, "the two to store everything")
    moments["stored"] = time.monotonic()
    result = tally(store, produced)
    print(f"\ningest x3, one killed (SIGKILL) a third into the stream: {result}; group of 2 "
          f"{moments['rebalanced'] - moments['kill']:.1f}s after the kill, everything stored "
          f"{moments['stored'] - moments['kill']:.1f}s after it ({stored_at_end_of_stream} of "
          f"{len(produced)} when the stream ended)")
    assert (result.lost, result.doubled, result.unknown) == (0, 0, 0)
    assert result.stored == len(produced)
    assert [p.alive for p in procs] == [True, False, True]


def test_the_store_jobs_run_in_one_ingest_process_and_a_killed_leaders_are_picked_up(
        roles: Deployment) -> None:
    store = roles.store
    procs = three_ingest(roles)
    path = lease_path(roles)
    zk = roles.coordination["zookeeper"]
    by_pid = {p.pid: p for p in procs}
    first = by_pid[pid_of(holders(zk, path)[0])]
    wait_for(lambda: runs(procs)[first.pid] > 0, 60, "the lease holder to run the rollup job")
    before = runs(procs)
    assert [pid for pid, n in before.items() if n > 0] == [first.pid]
    assert sorted(p.value("rocewatch_lease_leader") or 0.0 for p in procs) == [0.0, 0.0, 1.0]
    assert first.value("rocewatch_lease_leader") == 1.0

    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    killed = time.monotonic()
    survivors = [p for p in procs if p is not first]
    second = wait_for(lambda: next((p for p in survivors
                                    if p.value("rocewatch_lease_leader") == 1.0), None),
                      60, "a survivor to take the lease")
    took = time.monotonic() - killed
    assert pid_of(holders(zk, path)[0]) == second.pid
    # the work goes on from the new holder: samples produced after the kill get rolled
    batches = polls(devices=6, rounds=24)
    produce(roles, batches, seconds=2)
    wait_for(lambda: stored_count(store) >= len(keys_of(batches)), 90, "the samples stored")
    rolled = wait_for(lambda: second.value("rocewatch_rollup_buckets_total"), 90,
                      "the new holder to roll the buckets")
    after = runs(survivors)
    other = next(p for p in survivors if p is not second)
    print(f"\nlease ingest-jobs: first holder pid {first.pid} killed (SIGKILL); pid "
          f"{second.pid} took it {took:.1f}s later (ZooKeeper session "
          f"{roles.coordination['session_timeout_s']}s) and rolled {rolled:.0f} buckets; "
          f"rollup runs by pid: before {before}, after {after}")
    assert after[second.pid] > 0
    assert after[other.pid] == 0, "a process that never held the lease ran the rollup job"
