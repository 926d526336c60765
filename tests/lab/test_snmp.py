"""The SNMP agents, checked with pysnmp 7: bulk walks of every table served, v2c and v3 authPriv."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_walk_cmd,
    get_cmd,
    usmAesCfb128Protocol,
    usmHMACSHAAuthProtocol,
)
from pysnmp.proto import rfc1902

from lab.runtime import Lab
from lab.snmp import mib
from tests.lab.conftest import snmp_target

SWITCH = "spine2"   # SNMP in the mixed lab; four ports, one per leaf
N_PORTS = 4
V2C = CommunityData("rocewatch", mpModel=1)
V3 = UsmUserData("rocewatch", "rocewatch-auth", "rocewatch-priv",
                 authProtocol=usmHMACSHAAuthProtocol, privProtocol=usmAesCfb128Protocol)


Rows = list[tuple[tuple[int, ...], Any]]


class Manager:
    """One pysnmp engine on one long-lived event loop (pysnmp binds an engine to its loop, and
    building an engine costs a second or two)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = self.loop.run_until_complete(self._engine())

    @staticmethod
    async def _engine() -> SnmpEngine:
        return SnmpEngine()

    def close(self) -> None:
        self.engine.close_dispatcher()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()


@pytest.fixture(scope="module")
def manager() -> Iterator[Manager]:
    m = Manager()
    yield m
    m.close()


class Snmp:
    def __init__(self, lab: Lab, auth: Any, manager: Manager) -> None:
        self.host, self.port = snmp_target(lab, SWITCH)
        self.auth = auth
        self.m = manager

    async def _walk(self, engine: SnmpEngine, target: Any, root: tuple[int, ...]) -> Rows:
        rows: Rows = []
        async for err, status, _idx, binds in bulk_walk_cmd(
                engine, self.auth, target, ContextData(), 0, 25,
                ObjectType(ObjectIdentity(".".join(map(str, root)))),
                lookupMib=False, lexicographicMode=False):
            assert not err and not status, (err, status)
            rows.extend((tuple(name), val) for name, val in binds)
        return rows

    async def _run(self, roots: list[tuple[int, ...]], get: bool) -> list[Any]:
        engine = self.m.engine
        target = await UdpTransportTarget.create((self.host, self.port), timeout=2, retries=2)
        if not get:
            return [await self._walk(engine, target, r) for r in roots]
        err, status, _idx, binds = await get_cmd(
            engine, self.auth, target, ContextData(),
            *(ObjectType(ObjectIdentity(".".join(map(str, o)))) for o in roots),
            lookupMib=False)
        assert not err and not status, (err, status)
        return [val for _name, val in binds]

    def walk(self, *roots: tuple[int, ...]) -> list[Rows]:
        return self.m.loop.run_until_complete(self._run(list(roots), get=False))

    def get(self, *oids: tuple[int, ...]) -> list[Any]:
        return self.m.loop.run_until_complete(self._run(list(oids), get=True))


@pytest.fixture(params=["v2c", "v3"])
def snmp(request: pytest.FixtureRequest, mixed_lab: Lab, manager: Manager) -> Iterator[Snmp]:
    yield Snmp(mixed_lab, V2C if request.param == "v2c" else V3, manager)


def _cols(rows: list[tuple[tuple[int, ...], Any]], base: tuple[int, ...]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for oid, _val in rows:
        assert oid[:len(base)] == base
        counts[oid[len(base)]] = counts.get(oid[len(base)], 0) + 1
    return counts


def test_if_tables(snmp: Snmp) -> None:
    rows, xrows = snmp.walk(mib.IF_TABLE, mib.IFX_TABLE)
    cols = _cols(rows, mib.IF_TABLE)
    assert set(cols) == {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 19, 20}
    assert set(cols.values()) == {N_PORTS}
    names = {oid[-1]: str(v) for oid, v in rows if oid[len(mib.IF_TABLE)] == 2}
    assert names == {k: f"Ethernet{k}" for k in range(1, N_PORTS + 1)}
    assert all(isinstance(v, rfc1902.Counter32) for oid, v in rows
               if oid[len(mib.IF_TABLE)] in (10, 16))
    xcols = _cols(xrows, mib.IFX_TABLE)
    assert set(xcols) == set(range(1, 20)) and set(xcols.values()) == {N_PORTS}
    hc_out = [int(v) for oid, v in xrows if oid[len(mib.IFX_TABLE)] == 10]
    assert all(isinstance(v, rfc1902.Counter64) for oid, v in xrows
               if oid[len(mib.IFX_TABLE)] in (6, 7, 10, 11))
    assert sum(hc_out) > 0
    speeds = {int(v) for oid, v in xrows if oid[len(mib.IFX_TABLE)] == 15}
    assert speeds == {400000}


def test_etherlike_and_pfc_tables(snmp: Snmp) -> None:
    dot3, hc, ieee, cpfc, prio, wait, qos = snmp.walk(
        mib.DOT3_STATS, mib.DOT3_HC_STATS, mib.IEEE_PFC_IF, mib.CPFC_IF, mib.CPFC_PRIO,
        mib.CPFC_WAIT, mib.CSQ_STATS)
    assert _cols(dot3, mib.DOT3_STATS) == {1: 4, 2: 4, 3: 4, 18: 4}
    assert _cols(hc, mib.DOT3_HC_STATS) == {1: 4, 2: 4, 6: 4}
    assert _cols(ieee, mib.IEEE_PFC_IF) == {1: 4, 2: 4, 3: 4}
    assert all(isinstance(v, rfc1902.Counter32) for oid, v in ieee if oid[-2] in (2, 3))
    assert _cols(cpfc, mib.CPFC_IF) == {1: 4, 2: 4}
    assert _cols(prio, mib.CPFC_PRIO) == {2: 32, 3: 32}
    assert {oid[-2:] for oid, _ in prio} == {(k, p) for k in range(1, 5) for p in range(8)}
    assert all(isinstance(v, rfc1902.Counter64) for _, v in prio)
    assert _cols(wait, mib.CPFC_WAIT) == {2: 32, 3: 32}
    assert len(qos) == 4 * 8 * 3
    assert {oid[len(mib.CSQ_STATS) + 1:] for oid, _ in qos} == {
        (2, q, s) for q in range(1, 9) for s in (1, 2, 5)}
    sent_bytes = sum(int(v) for oid, v in qos if oid[-1] == 2 and oid[-2] == 4)
    assert sent_bytes > 0      # RoCE rides queue 3, index 3 + 1


def test_system_clock_is_simulated(mixed_lab: Lab, snmp: Snmp) -> None:
    before = mixed_lab.sim_time()
    uptime, date, name = snmp.get((*mib.SYSTEM, 3, 0), mib.HR_SYSTEM_DATE, (*mib.SYSTEM, 5, 0))
    after = mixed_lab.sim_time()
    assert str(name) == SWITCH
    # both come from the snapshot served, published every 0.1 simulated s (no reset yet); at
    # speed 20 a loaded machine can hold a snapshot back a few publications, while a wall clock
    # would be off by the run's whole length times 19
    stale = 2.0
    assert before - stale <= int(uptime) / 100 <= after + 0.01
    raw = bytes(date)
    year = raw[0] << 8 | raw[1]
    when = dt.datetime(year, *raw[2:7], tzinfo=dt.UTC).timestamp() + raw[7] / 10
    sim = when - mixed_lab.epoch_ns / 1e9
    assert before - stale - 0.1 <= sim <= after + 0.01


def test_walk_of_the_whole_agent_ends_cleanly(mixed_lab: Lab, manager: Manager) -> None:
    (rows,) = Snmp(mixed_lab, V2C, manager).walk((1, 3))
    assert len(rows) == 8 + N_PORTS * 105   # system, ifNumber, hrSystemDate + per port
    oids = [o for o, _ in rows]
    assert oids == sorted(oids)
    assert mib.HR_SYSTEM_DATE in oids


def test_wrong_v3_keys_are_refused(mixed_lab: Lab, manager: Manager) -> None:
    bad = UsmUserData("rocewatch", "not-the-key", "rocewatch-priv",
                      authProtocol=usmHMACSHAAuthProtocol, privProtocol=usmAesCfb128Protocol)
    with pytest.raises(AssertionError):
        Snmp(mixed_lab, bad, manager).get((*mib.SYSTEM, 3, 0))


def test_counter_reset_shows_as_uptime_going_back(mixed_lab: Lab, manager: Manager) -> None:
    s = Snmp(mixed_lab, V2C, manager)
    hc_in = (*mib.IFX_TABLE, 6, 1)
    up_before, in_before = s.get((*mib.SYSTEM, 3, 0), hc_in)
    mixed_lab.reset_counters("leaf4")        # another SNMP switch; keep spine2's counters
    mixed_lab.reset_counters(SWITCH)
    mixed_lab.wait_until(mixed_lab.sim_time() + 0.3, timeout=30)
    up_after, in_after = s.get((*mib.SYSTEM, 3, 0), hc_in)
    assert int(up_after) < int(up_before)
    assert int(in_after) <= int(in_before)
