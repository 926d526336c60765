"""The SNMP collector: every SNMP target polled on its own schedule in one asyncio loop.

``run`` owns an event loop in the calling thread. An APScheduler ``AsyncIOScheduler`` in that loop
starts each target's poll every sample interval (start times spread by a hash of the name, so a
thousand targets do not fire in the same millisecond); a poll still running when its next turn
comes is not doubled up but counted as an overrun, and that interval honestly reports
``collector_received = 0``. Polls are coroutines with their own timeouts and retries: a dead
target costs its own task a few timeouts and nothing else; at most ``max_concurrent_polls`` are in
flight, the rest wait their turn. A second job emits each target's health samples as its
intervals end (:mod:`collectors.health`: counted by the polls' own times). A third reads each
target's LLDP neighbours every ``lldp_interval_s`` of its clock (:mod:`collectors.snmp.lldp`);
with ``lldp_watch`` each poll also GETs ``lldpStatsRemTablesLastChangeTime`` beside the clock (no
extra round trip) and the neighbours are read again as soon as it moves, so a neighbour that comes
or goes is reported within a poll of the device noticing, not up to ``lldp_interval_s`` later.
Such a target's reports are live tables (``streamed``: held until its next report, as an ON_CHANGE
stream's); a poll that fails sends the last one again as a snapshot, as a lost stream does. A
device that does not serve it is read on the interval alone, its reports snapshots.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import Field

from collectors.base import Collector, CollectorOptions, Emit, load_targets, summarize
from collectors.clocks import HOLD_MIN_S, CollectorClock, DeviceClock, FabricClock, wall_ns
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import SnmpProfile, load_profile
from collectors.snmp.client import SnmpClient, V2cChannel, V3Target
from collectors.snmp.lldp import REM_TABLES_LAST_CHANGE, read_neighbors
from collectors.snmp.poll import SnmpPoller
from pipeline.errors import ConfigError
from pipeline.inventory import Target, resolve_secrets
from pipeline.model import BatchBuilder
from pipeline.topology.neighbors import NeighborReport

log = logging.getLogger("rocewatch.collectors.snmp")


class SnmpOptions(CollectorOptions):
    #: local address of the collector's UDP socket ("" lets the system choose)
    bind_address: str = ""
    #: polls in flight at once (the rest wait their turn)
    max_concurrent_polls: int = Field(64, ge=1)
    #: how often the ifIndex → ifName map is walked again (wall seconds)
    ifname_refresh_s: float = Field(300.0, gt=0)
    #: a device whose date is further than this from the collector's clock is stamped by the
    #: collector's clock instead (and its health says so)
    clock_tolerance_s: float = Field(300.0, gt=0)
    #: read a target's LLDP neighbours again as soon as its ``lldpStatsRemTablesLastChangeTime``
    #: (read with every poll's clock) moves, besides every ``lldp_interval_s``
    lldp_watch: bool = True


class _Target:
    __slots__ = ("busy", "health", "lldp_busy", "lldp_error", "lldp_live", "lldp_mark",
                 "overruns", "poller", "target")

    def __init__(self, target: Target, health: TargetHealth) -> None:
        self.target = target
        self.health = health
        self.poller: SnmpPoller | None = None
        self.busy = False
        self.overruns = 0
        self.lldp_error = ""
        #: an LLDP read is running; the change time the last read started after
        self.lldp_busy = False
        self.lldp_mark: int | None = None
        #: the last report, sent as a live table (``streamed``), while the polls watch it
        self.lldp_live: NeighborReport | None = None


class SnmpCollector(Collector):
    """SNMP v2c/v3 poller for every SNMP target of the inventory."""

    name = "snmp"
    Options = SnmpOptions

    def __init__(self, instance: str, options: SnmpOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        self.opts = options
        targets, self.env = load_targets(options, "snmp")
        self.tally = ErrorTally(f"snmp collector {instance}")
        slowest = max((t.sample_interval_s / t.clock_rate for t in targets), default=1.0)
        self.fabric = FabricClock(hold_s=max(1.5 * slowest, HOLD_MIN_S),
                                  rate=max((t.clock_rate for t in targets), default=1.0))
        self.profiles: dict[str, SnmpProfile] = {}
        self.targets: dict[str, _Target] = {}
        for target in targets:
            profile = load_profile(target.profile, options.profile_dirs)
            if not isinstance(profile, SnmpProfile):
                raise ConfigError(f"target {target.name}: profile {target.profile} is not SNMP")
            self.profiles[target.name] = profile
            health = TargetHealth(target.name, "snmp", target.address, target.profile,
                                  target.sample_interval_s, DeviceClock(target.clock_rate),
                                  self.fabric, stale_intervals=options.stale_intervals)
            self.targets[target.name] = _Target(target, health)
        if not self.targets:
            log.warning("snmp collector %s has no SNMP targets", instance)
        self._channel: V2cChannel | None = None
        #: SNMPv3 engines by credentials: pysnmp keeps USM users by name, so targets that share
        #: a user name with different keys need engines of their own
        self._engines: dict[tuple[str, ...], Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._semaphore: asyncio.Semaphore | None = None
        self.lldp_reports = 0
        self.lldp_errors = 0
        #: LLDP reads started because a target's remote table changed
        self.lldp_on_change = 0

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main(stop))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self, stop: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        waker = threading.Thread(target=lambda: (stop.wait(), loop.call_soon_threadsafe(
            stopped.set)), daemon=True, name=f"snmp-{self.instance}-stop")
        waker.start()
        self._semaphore = asyncio.Semaphore(self.opts.max_concurrent_polls)
        bind = (self.opts.bind_address, 0) if self.opts.bind_address else None
        self._channel = V2cChannel(bind)
        await self._channel.open()
        scheduler = AsyncIOScheduler(event_loop=loop, timezone=UTC, job_defaults={
            "coalesce": True, "max_instances": 2, "misfire_grace_time": None})
        now = datetime.now(UTC)
        tick = 0.5
        for name, t in self.targets.items():
            interval = t.health.interval_wall
            tick = min(tick, interval / 4)
            offset = (zlib.crc32(name.encode()) % 1000) / 1000 * interval
            scheduler.add_job(self._poll_job, IntervalTrigger(seconds=interval), args=[name],
                              id=f"poll-{name}", next_run_time=now + timedelta(seconds=offset))
        scheduler.add_job(self._health_job, IntervalTrigger(seconds=max(tick, 0.01)),
                          id="health", next_run_time=now)
        if self.emit_neighbors is not None and self.opts.lldp_interval_s > 0:
            for name, t in self.targets.items():
                every = self.opts.lldp_interval_s / t.target.clock_rate
                offset = (zlib.crc32(b"lldp" + name.encode()) % 1000) / 1000 * every
                scheduler.add_job(self._lldp_job, IntervalTrigger(seconds=every), args=[name],
                                  id=f"lldp-{name}", next_run_time=now + timedelta(seconds=offset))
        scheduler.start()
        self.started.set()
        try:
            await stopped.wait()
        finally:
            # no new runs; let runs already handed to the loop start, cancel them, and only
            # then shut the scheduler down (it cancels whatever it still holds, and logs that)
            scheduler.pause()
            await asyncio.sleep(0)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await asyncio.sleep(0)  # lets the scheduler's completion callbacks run
            scheduler.shutdown(wait=False)
            self._channel.close()
            for engine in self._engines.values():
                engine.close_dispatcher()
            waker.join(1.0)

    # -- jobs ----------------------------------------------------------------------------------

    async def _poll_job(self, name: str) -> None:
        t = self.targets[name]
        if t.busy:
            t.overruns += 1
            return
        task = asyncio.current_task()
        assert task is not None and self._semaphore is not None
        self._tasks.add(task)
        t.busy = True
        try:
            async with self._semaphore:
                poller = t.poller or self._poller(t)
                if poller is None:
                    return
                batch = await poller.poll()
            if batch is not None and len(batch):
                self.emit(batch)
            if batch is None:
                self._lldp_unwatched(t)
            else:
                self._lldp_if_changed(t)
        except asyncio.CancelledError:
            return  # the collector is stopping; ending quietly keeps the scheduler from logging
        finally:
            t.busy = False
            self._tasks.discard(task)

    def _poller(self, t: _Target) -> SnmpPoller | None:
        target = t.target
        assert target.snmp is not None and self._channel is not None
        try:
            secrets = resolve_secrets(target, self.env)
        except ConfigError as exc:
            t.health.last_error = str(exc)
            self.tally.record(t.health, "config", str(exc))
            return None
        client: SnmpClient
        if target.snmp.version == "3":
            snmp = target.snmp
            key = (snmp.user, snmp.auth_protocol, secrets.auth_key, snmp.priv_protocol,
                   secrets.priv_key)
            engine = self._engines.get(key)
            if engine is None:
                from pysnmp.hlapi.v3arch.asyncio import SnmpEngine

                engine = self._engines[key] = SnmpEngine()
            client = V3Target(engine, target, secrets)
        else:
            client = self._channel.target(target, secrets)
        t.poller = SnmpPoller(target.name, self.profiles[target.name], client, t.health,
                              self.tally, target.snmp.max_repetitions,
                              self.opts.ifname_refresh_s, target.snmp.columns_per_request,
                              CollectorClock(target.clock_rate), self.opts.clock_tolerance_s,
                              watch=(REM_TABLES_LAST_CHANGE,) if self._watches_lldp() else ())
        return t.poller

    def _watches_lldp(self) -> bool:
        return (self.emit_neighbors is not None and self.opts.lldp_interval_s > 0
                and self.opts.lldp_watch)

    def _lldp_if_changed(self, t: _Target) -> None:
        """After a poll: an LLDP read of the target when its remote table changed since the
        last read started (and none is running)."""
        mark = t.poller.watched.get(REM_TABLES_LAST_CHANGE) if t.poller else None
        if mark is None or mark == t.lldp_mark or t.lldp_busy:
            return
        self.lldp_on_change += 1
        task = asyncio.get_running_loop().create_task(self._lldp_job(t.target.name))
        self._tasks.add(task)

    def _lldp_unwatched(self, t: _Target) -> None:
        """A failed poll: a table sent as live is no longer watched, so it is sent once more as
        a snapshot at its time (detection stops taking it as holding), and the next poll that
        answers has it read again."""
        t.lldp_mark = None
        report, t.lldp_live = t.lldp_live, None
        if report is not None and self.emit_neighbors is not None:
            self.emit_neighbors(report.model_copy(update={"streamed": False}))

    async def _lldp_job(self, name: str) -> None:
        """One LLDP read of a target (:mod:`collectors.snmp.lldp`), stamped with the device's
        time as its polls know it; a failure is the target's own, logged when it changes. A read
        already running for the target makes this one a no-op."""
        t = self.targets[name]
        task = asyncio.current_task()
        assert task is not None and self._semaphore is not None and t.target.snmp is not None
        if t.lldp_busy:
            self._tasks.discard(task)
            return
        self._tasks.add(task)
        t.lldp_busy = True
        try:
            async with self._semaphore:
                poller = t.poller or self._poller(t)
                if poller is None:
                    return
                # the table read next is at least as new as the change time the last poll saw
                t.lldp_mark = mark = poller.watched.get(REM_TABLES_LAST_CHANGE)
                wall = time.monotonic()
                ts = t.health.clock.now_ns(wall) or self.fabric.now_ns(wall) or wall_ns(wall)
                last = t.lldp_live.ts_ns if t.lldp_live is not None else None
                changed = poller.time_of(mark) if mark is not None else None
                if changed is not None and last is not None and changed > last:
                    # the table has said the same since it changed after the last read (the
                    # change time says so): a live table holds from then
                    ts = min(ts, changed)
                report = await read_neighbors(poller.client, name, ts,
                                              t.target.snmp.max_repetitions,
                                              t.target.snmp.columns_per_request)
            if mark is not None:
                # every change of the table is read as the polls see it: a live table, held
                # until the next report, as an ON_CHANGE stream's is
                report = t.lldp_live = report.model_copy(update={"streamed": True})
            if self.emit_neighbors is not None:
                self.emit_neighbors(report)
            self.lldp_reports += 1
            t.lldp_error = ""
        except asyncio.CancelledError:
            return
        except Exception as exc:  # one target's failure stays its own
            detail = f"{type(exc).__name__}: {exc}"
            if detail != t.lldp_error:
                log.warning("LLDP read of %s failed: %s", name, detail)
            t.lldp_error = detail
            self.lldp_errors += 1
        finally:
            t.lldp_busy = False
            self._tasks.discard(task)

    async def _health_job(self) -> None:
        wall = time.monotonic()
        for t in self.targets.values():
            t.health.tick(wall)
            if t.health.pending_intervals:
                builder = BatchBuilder()
                t.health.drain(builder)
                self.emit(builder.build())

    # -- health --------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        wall = time.monotonic()
        targets: dict[str, dict[str, Any]] = {}
        for name, t in self.targets.items():
            snap = t.health.snapshot(wall)
            snap["overruns"] = t.overruns
            snap["varbinds_total"] = t.poller.varbinds_total if t.poller else 0
            targets[name] = snap
        malformed = self._channel.malformed if self._channel else 0
        lldp = {"interval_s": self.opts.lldp_interval_s, "reports": self.lldp_reports,
                "on_change": self.lldp_on_change,
                "watched": sum(bool(t.poller and t.poller.watched) for t in self.targets.values()),
                "errors": self.lldp_errors,
                "failing": sorted(n for n, t in self.targets.items() if t.lldp_error)}
        return summarize("snmp", self.instance, targets, unattributed_malformed=malformed,
                         lldp=lldp)
