"""The groups and the lease of :mod:`pipeline.cluster` against the test ZooKeeper, in one
process: who leads, which shard each member owns, and what changes when one leaves; the lease
starts its work in exactly one member and moves it when that member leaves."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pipeline.cluster.group import Group, View
from pipeline.cluster.lease import Lease
from pipeline.config import CoordinationSettings
from pipeline.errors import ConfigError, CoordinationError
from tests.cluster.known_set import wait_for
from tests.cluster.roles import SESSION_TIMEOUT_S

pytestmark = [pytest.mark.integration]


@pytest.fixture
def coordination(zookeeper_address: str, unique_name: Any) -> CoordinationSettings:
    return CoordinationSettings(zookeeper=zookeeper_address, root="/" + unique_name("t"),
                                session_timeout_s=SESSION_TIMEOUT_S)


def test_members_are_ordered_by_joining_and_own_one_shard_each(
        coordination: CoordinationSettings) -> None:
    seen: list[View] = []
    groups = [Group(coordination, "lab", "g", f"m{i}",
                    on_change=seen.append if i == 2 else None).start() for i in range(3)]
    try:
        wait_for(lambda: all(len(g.view.members) == 3 for g in groups), 10, "three members")
        assert [g.view.shard for g in groups] == ["0/3", "1/3", "2/3"]
        assert [g.view.leader for g in groups] == [True, False, False]
        named = groups[0].identities()
        assert [named[node] for node in groups[0].view.members] == ["m0", "m1", "m2"]
        groups[0].stop()  # leaves at once: its node is deleted, not expired
        # each member learns of the leaver from its own watch, in its own time
        wait_for(lambda: groups[2].view.shard == "1/2" and groups[1].view.shard == "0/2", 10,
                 "the views without the leaver")
        assert groups[1].view.leader
        assert seen[-1] == groups[2].view and seen[-1].me == 1
    finally:
        for g in groups[1:]:
            g.stop()


def test_the_lease_runs_its_work_in_one_member_and_moves_it(
        coordination: CoordinationSettings) -> None:
    running: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> tuple[Any, Any]:
        def start() -> None:
            with lock:
                running.append(i)

        def stop() -> None:
            with lock:
                running.remove(i)
        return start, stop

    leases = [Lease(coordination, "lab", "jobs", *work(i)).begin() for i in range(3)]
    try:
        # they join from their own threads: whichever joined first leads
        wait_for(lambda: len(running) == 1 and all(len(lease.group.view.members) == 3
                                                    for lease in leases), 15,
                 "one member to start the work")
        first = running[0]
        assert [lease.leading for lease in leases] == [i == first for i in range(3)]
        leases[first].close()
        wait_for(lambda: len(running) == 1 and running[0] != first, 15,
                 "another member to take the work")
        second = running[0]
        rest = [i for i in range(3) if i != first]
        assert [leases[i].leading for i in rest] == [i == second for i in rest]
        assert [leases[i].acquired for i in rest] == [int(i == second) for i in rest]
    finally:
        for lease in leases:
            lease.close()
    assert running == []


def test_a_group_needs_zookeeper_and_a_plain_name(coordination: CoordinationSettings) -> None:
    with pytest.raises(ConfigError):
        Group(CoordinationSettings(), "lab", "g", "m")
    with pytest.raises(ConfigError):
        Group(coordination, "lab", "a/b", "m")
    nowhere = coordination.model_copy(update={"zookeeper": "127.0.0.1:1"})
    with pytest.raises(CoordinationError):
        Group(nowhere, "lab", "g", "m").start(timeout_s=1)
