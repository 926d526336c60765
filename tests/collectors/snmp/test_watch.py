"""Scalars a poll watches beside its clock (LLDP-MIB's ``lldpStatsRemTablesLastChangeTime``):
read in the clock's own GET, and dropped, without losing the poll, by a device that does not
serve them or refuses the longer request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from collectors.clocks import DeviceClock
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import SnmpProfile, load_profile
from collectors.snmp.ber import NO_SUCH_OBJECT, OCTET_STRING, TIMETICKS, Varbind, oid_bytes
from collectors.snmp.client import SnmpErrorStatus
from collectors.snmp.collector import SnmpCollector, SnmpOptions
from collectors.snmp.lldp import REM_TABLES_LAST_CHANGE
from collectors.snmp.poll import SnmpPoller
from pipeline.topology.neighbors import NeighborReport
from tests.collectors.conftest import write_targets

PROFILE = cast(SnmpProfile, load_profile("snmp", ()))
UPTIME = oid_bytes(PROFILE.system.sys_uptime)


class Agent:
    """An SNMP client answering GETs from a table of scalars (no columns to walk); it may
    refuse any GET of more than the clock's two objects with an error-status, as some agents
    answer an object they do not know (genErr)."""

    def __init__(self, scalars: dict[bytes, tuple[int, int | bytes]], refuse: bool = False):
        self.scalars = scalars
        self.refuse = refuse
        self.gets: list[int] = []

    async def get(self, oids: Sequence[bytes]) -> list[Varbind]:
        self.gets.append(len(oids))
        if self.refuse and len(oids) > 2:
            raise SnmpErrorStatus(5, 3)
        return [(o, *self.scalars[o]) if o in self.scalars else (o, NO_SUCH_OBJECT, None)
                for o in oids]

    async def bulk(self, oids: Sequence[bytes], max_repetitions: int) -> list[Varbind]:
        return []


def _poller(agent: Agent) -> SnmpPoller:
    health = TargetHealth("dev", "snmp", "127.0.0.1:161", "snmp", 1.0, DeviceClock())
    return SnmpPoller("dev", PROFILE, agent, health, ErrorTally("test"),
                      watch=(REM_TABLES_LAST_CHANGE,))


def _polls(poller: SnmpPoller, agent: Agent, marks: list[int]) -> list[int | None]:
    seen: list[int | None] = []
    for i, mark in enumerate(marks):
        agent.scalars[UPTIME] = (TIMETICKS, 1000 + 100 * i)
        if agent.scalars.get(REM_TABLES_LAST_CHANGE, (0, 0))[0] == TIMETICKS:
            agent.scalars[REM_TABLES_LAST_CHANGE] = (TIMETICKS, mark)
        asyncio.run(poller.poll())
        seen.append(poller.watched.get(REM_TABLES_LAST_CHANGE))
    return seen


def test_the_change_time_is_read_in_the_clocks_get_at_every_poll() -> None:
    agent = Agent({REM_TABLES_LAST_CHANGE: (TIMETICKS, 0)})
    poller = _poller(agent)
    assert _polls(poller, agent, [0, 0, 700, 700]) == [0, 0, 700, 700]
    assert agent.gets == [3, 3, 3, 3]          # one GET a poll: the clock and the change time
    # the change time as a sample time: counted back from the last poll's (uptime 1300 cs)
    assert poller.time_of(700) == poller.stamp_ns - 600 * 10_000_000
    assert poller.time_of(1301) is None and poller.time_of(-1) is None
    # the agent has no hrSystemDate (collector-stamped): no other error
    assert set(poller.health.errors) == {"no_device_clock"}


def test_a_device_without_it_is_asked_for_the_clock_alone_from_then_on() -> None:
    agent = Agent({})
    poller = _poller(agent)
    assert _polls(poller, agent, [0, 0, 0]) == [None, None, None]
    assert agent.gets == [3, 2, 2]
    assert "wrong_type" not in poller.health.errors


def test_a_device_that_refuses_the_longer_get_keeps_its_polls() -> None:
    agent = Agent({REM_TABLES_LAST_CHANGE: (TIMETICKS, 0)}, refuse=True)
    poller = _poller(agent)
    assert _polls(poller, agent, [0, 5, 9]) == [None, None, None]
    assert agent.gets == [3, 2, 2, 2]          # refused once, then the clock alone
    assert poller.health.errors.get("watch_refused") == 1
    assert poller.health.connected and "poll_failed" not in poller.health.errors


def test_a_change_time_of_the_wrong_type_is_counted_and_dropped() -> None:
    agent = Agent({REM_TABLES_LAST_CHANGE: (OCTET_STRING, b"yesterday")})
    poller = _poller(agent)
    assert _polls(poller, agent, [0, 0]) == [None, None]
    assert agent.gets == [3, 2] and poller.health.errors.get("wrong_type") == 1


class _Failing:
    """A poller whose polls fail (it answers None, as :meth:`SnmpPoller.poll` does then)."""

    def __init__(self) -> None:
        self.watched: dict[bytes, int] = {}

    async def poll(self) -> None:
        return None


def test_a_failed_poll_sends_the_live_table_once_more_as_a_snapshot(tmp_path: Path) -> None:
    """While the polls fail nobody watches the table change: the last report, sent as live, is
    sent again as a snapshot at its time (detection stops taking it as holding), once, and the
    next poll that answers has the table read again."""
    path = write_targets(tmp_path / "targets.yaml", [{
        "name": "dev", "address": "127.0.0.1:9", "protocol": "snmp", "profile": "snmp",
        "snmp": {"version": "2c", "community_env": "T_DEV"}}])
    collector = SnmpCollector("t", SnmpOptions(targets=str(path)), emit=lambda b: None)
    got: list[NeighborReport] = []
    collector.emit_neighbors = got.append
    t = collector.targets["dev"]
    t.poller = cast(SnmpPoller, _Failing())
    t.lldp_live = NeighborReport(device="dev", ts_ns=5, streamed=True, source="snmp")
    t.lldp_mark = 700

    async def poll() -> None:
        collector._semaphore = asyncio.Semaphore(1)
        await collector._poll_job("dev")

    asyncio.run(poll())
    assert [(r.device, r.ts_ns, r.streamed) for r in got] == [("dev", 5, False)]
    assert t.lldp_live is None and t.lldp_mark is None      # read again at the next answer
    asyncio.run(poll())
    assert len(got) == 1
