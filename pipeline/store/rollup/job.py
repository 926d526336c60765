"""The rollup job: rolls every complete bucket once, in bulk, and re-rolls buckets late samples
reach. It runs from an apscheduler job in the role that writes the store (ingest).

Event time, not the wall clock, decides when a bucket is complete: once the data's event time
is ``lateness`` past the bucket's end. The data's event time is the newest one the marks carry
(the store writes marks with every sample insert; ingest's say how far every partition it reads
has come: :mod:`pipeline.store.rollup.clock`). Each run

1. reads the rollups' states and the marks written since the last run (server clock; on a
   cluster the last :attr:`Store.read_lag_s` again, as a read may see a write late), and asks
   the store whether a write is unreadable, again after the marks (a mark it saw stands for a
   write made before the second answer);
2. re-rolls the minute buckets already rolled that new marks name (late samples), unless they are
   more than ``max_late`` behind the event time (those stay in the raw samples; counted), and the
   rolled buckets within the rate rule's horizon after them (a late sample changes how the
   intervals after it are judged: :mod:`pipeline.rates`);
3. rolls the minute buckets that became complete, from the watermark on, a few per statement
   (reading the rate rule's horizon before them; a job made with ``proven_history`` reads the
   whole horizon only for the series the rollup row of the minute before does not prove need
   less: :mod:`pipeline.store.rollup.history`, the same rows, off as it did not pay at the
   reference fabric);
4. does the same for the hour rollup from the minute rows (an hour is complete once its minutes
   are rolled; an hour holding a re-rolled minute is re-rolled);
5. records the new states. A run that fails part way records nothing and the next one redoes it:
   every roll is safe to repeat (:mod:`pipeline.store.rollup.sql`).

A restart resumes from the states in the store. Several ingest processes may each run the job:
they read the same marks and states, and a bucket rolled twice is the same row.

On a cluster a roll may read a shard's replica that lacks a part another replica took just
before it died (the part waits there until it returns: :meth:`Store.unreadable_since`). Minute
buckets rolled while some write was unreadable are rolled again, as late ones, by the first run
that finds every such write readable: a bucket's rows then hold every sample the store took,
whatever died meanwhile. The writes that were out of sight carry marks that may have been out of
sight too (or seen, when they went to another shard, before their samples could be read): so
when a stretch of unreadable writes ends, the first run reads the marks again from the oldest
such write on and rolls every minute bucket they name once more, seen or not. A replica that
died just after a run found every write readable, and before that run's rolls read it, is
caught that way. (Both lists live in the process: a job restarted in between leaves those
buckets as rolled.)
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pipeline.config import StoreSettings
from pipeline.errors import StoreError
from pipeline.rates.rule import HORIZON_NS
from pipeline.store.base import Store, kept_rollups
from pipeline.store.rollup.history import rows_relation
from pipeline.store.rollup.sql import (
    State,
    floor_to,
    marked_buckets_sql,
    marks_since_sql,
    roll_ranges,
    roll_sql,
    state_insert,
    state_sql,
    statement_span,
)
from pipeline.store.schema import Rollup

log = logging.getLogger("rocewatch.rollup")

NS = 1_000_000_000
#: statements one run issues at most for complete buckets (a long backlog takes several runs,
#: each recording its progress)
MAX_STATEMENTS_PER_RUN = 60



@dataclass
class RollupStats:
    """What the job did (exposed by the health endpoints)."""

    runs: int = 0
    failures: int = 0
    statements: int = 0
    #: buckets rolled once complete, by rollup
    rolled: dict[str, int] = field(default_factory=dict)
    #: buckets rolled again for late samples, by rollup
    rerolled: dict[str, int] = field(default_factory=dict)
    #: minute buckets whose late samples came after ``max_late`` (left to the raw samples)
    too_late: int = 0
    #: minute buckets rolled again because a write was unreadable when they were rolled
    unsure_rerolled: int = 0
    #: the data's event time, and each rollup's watermark (ns)
    event_ns: int = 0
    done_ns: dict[str, int] = field(default_factory=dict)
    last_run_s: float = 0.0
    busy_s: float = 0.0


class RollupJob:
    """The scheduled roller of one store's rollups (a no-op when the store keeps none)."""

    def __init__(self, store: Store, settings: StoreSettings,
                 rollups: tuple[Rollup, ...] | None = None, proven_history: bool = False,
                 ) -> None:
        self.store = store
        self.settings = settings
        self.rollups = kept_rollups(settings) if rollups is None else rollups
        if self.rollups and self.rollups[0].parent is not None:
            raise StoreError("the first rollup must be rolled from the samples")
        self.lateness_ns = int(settings.rollup_lateness_s * NS)
        self.max_late_ns = int(settings.rollup_max_late_s * NS)
        self.stats = RollupStats()
        #: with ``proven_history``, where a minute roll reads the rows that prove a series needs
        #: less history than the rule's horizon (:mod:`pipeline.store.rollup.history`); off by
        #: default: at the reference fabric it did not pay (docs/benchmarks.md, issue 13)
        ch = store.settings
        cluster = ch.clickhouse.cluster if ch.kind == "clickhouse" else ""
        self._rows = rows_relation(store.database, cluster) if proven_history else None
        self._lock = threading.Lock()
        self._scheduler: Any = None
        #: the marks of the re-read window this job has accounted for, by (bucket, second)
        self._seen: dict[tuple[int, int], int] = {}
        #: minute buckets rolled while a write was unreadable, by the server second they were
        #: rolled: rolled again once every write from before then is readable
        self._unsure: dict[int, int] = {}
        #: the oldest unreadable write (server second) of the stretch of runs that found one,
        #: until a run finds every write readable and rolls again what was marked since then
        self._unreadable_from: int | None = None

    @property
    def needed(self) -> bool:
        return bool(self.rollups)

    @property
    def unsure(self) -> int:
        """Minute buckets rolled while a write was unreadable and not rolled again yet (they are,
        by the first run that finds every such write readable; a job stopped before that leaves
        them as rolled)."""
        return len(self._unsure)

    @property
    def settled(self) -> bool:
        """No write was unreadable since the last run that rolled again what such writes marked:
        a job stopped now leaves no bucket rolled from a replica that lacked a write it knew of."""
        return not self._unsure and self._unreadable_from is None

    # -- one run ------------------------------------------------------------------------------

    def run_once(self, event_ns: int | None = None) -> int:
        """One run; returns the buckets rolled (complete and late). ``event_ns`` makes the data's
        event time at least that (a replay that ended, a test): every bucket that ends
        ``lateness`` before it counts as complete. Raises StoreError (nothing is recorded)."""
        with self._lock:
            t0 = time.perf_counter()
            try:
                return self._run(event_ns)
            finally:
                self.stats.runs += 1
                self.stats.last_run_s = time.perf_counter() - t0
                self.stats.busy_s += self.stats.last_run_s

    def catch_up(self, event_ns: int | None = None, max_runs: int = 1000) -> int:
        """Run until a run rolls nothing; returns the buckets rolled."""
        total = 0
        for _ in range(max_runs):
            rolled = self.run_once(event_ns)
            total += rolled
            if not rolled:
                break
        return total

    def states(self) -> dict[str, State]:
        cols = self.store.query(state_sql(self.store.database))
        return {str(name): State(int(done), int(scanned), int(event)) for name, done, scanned,
                event in zip(cols["name"], cols["done"], cols["scanned_s"], cols["event"],
                             strict=True)}

    def _run(self, forced_event_ns: int | None) -> int:
        if not self.rollups:
            return 0
        store, db = self.store, self.store.database
        states = self.states()
        now_s = int(store.query("SELECT toUInt64(now()) AS now")["now"][0])
        unreadable = store.unreadable_since()
        ended = self._unreadable_from if unreadable is None else None
        if unreadable is not None:
            self._unreadable_from = min(unreadable, self._unreadable_from or unreadable)
        root = self.rollups[0]
        before = states.get(root.name, State())
        # marks are read again for a while after the last scan, and from before any write not
        # yet readable: a mark that a read did not see yet (it sits on a replica reads avoid
        # until it caught up, or on one that died) is found later; the ones already accounted
        # for do not count twice (the server's clock has whole seconds) ...
        reread = math.ceil(store.read_lag_s)
        reach = unreadable if unreadable is not None else ended
        horizon = min(before.scanned_s, reach if reach is not None else now_s)
        since = max(0, horizon - reread)
        counts, newest = self._marks_since(since)
        # asked again after the marks: a write whose mark this run saw is in a replica's queue
        # by now if another replica has still to fetch it (the first answer may predate it)
        again = store.unreadable_since()
        if again is not None:
            unreadable = again if unreadable is None else min(unreadable, again)
            self._unreadable_from = min(unreadable, self._unreadable_from or unreadable)
            ended = None
        settled = self._settled(unreadable)
        # ... but once every write is readable again, all marked since the oldest that was not
        # count: their buckets may have been rolled from a replica that lacked the write
        seen = {} if ended is not None else self._seen
        if ended is not None:
            log.info("every write is readable again: rolling again the minute buckets marked "
                     "since server second %d", ended)
        marked = sorted({b for (b, at), n in counts.items() if n > seen.get((b, at), 0)}
                        | settled)
        event = max(before.event_ns, forced_event_ns or 0, newest)
        if not before.done_ns and not marked:
            return 0  # no data yet
        width = root.bucket_ns
        done = before.done_ns or floor_to(min(marked), width)
        late = _with_followers(self._late(marked, done, event, width), done, width)
        target = max(done, floor_to(event - self.lateness_ns, width))
        new: dict[str, State] = {}
        count = reached = 0
        for rollup in self.rollups:
            if rollup is not root:  # from its parent: complete once the parent is rolled past
                width = rollup.bucket_ns
                parent_first = done
                done = states.get(rollup.name, State()).done_ns or floor_to(parent_first, width)
                late = sorted({floor_to(b, width) for b in late if floor_to(b, width) < done})
                target = max(done, floor_to(reached, width))
            rolled = self._roll(rollup, late, done, target)
            new[rollup.name] = State(rolled.done_ns, now_s, event)
            count += rolled.buckets
            reached = rolled.done_ns
            if rollup is root and unreadable is not None:  # once: not those rolled again now
                self._unsure.update((b, now_s) for b in rolled.starts if b not in settled)
        if counts or count:
            store.execute(state_insert(db, new))
        keep = min(now_s, unreadable if unreadable is not None else now_s) - reread
        self._seen = {key: n for key, n in counts.items() if key[1] >= keep}
        if unreadable is None:  # the stretch (if any) is rolled again: done with it
            self._unreadable_from = None
        self.stats.event_ns = event
        self.stats.done_ns = {name: s.done_ns for name, s in new.items()}
        return count

    def _settled(self, unreadable: int | None) -> set[int]:
        """The buckets rolled while a write was unreadable that every write from before their
        roll is readable for now (taken off the list: the caller rolls them again)."""
        ready = {b for b, at in self._unsure.items() if unreadable is None or unreadable > at}
        if ready:
            self.stats.unsure_rerolled += len(ready)
            log.info("rolling %d minute bucket(s) again: rolled while a write was unreadable",
                     len(ready))
        for b in ready:
            del self._unsure[b]
        return ready

    def _marks_since(self, scanned_s: int) -> tuple[dict[tuple[int, int], int], int]:
        """Marks written since ``scanned_s``: how many per (bucket, second written), and the
        newest event time they carry (0: none)."""
        marks = self.store.query(marks_since_sql(self.store.database, scanned_s))
        counts = {(int(b), int(at)): int(n) for b, at, n in zip(marks["bucket"], marks["at_s"],
                                                                marks["marks"], strict=True)}
        return counts, max((int(e) for e in marks["event"]), default=0)

    def _late(self, marked: list[int], done_ns: int, event_ns: int, width_ns: int) -> list[int]:
        """The marked buckets already rolled that are to be rolled again: all but those more
        than ``max_late`` behind the event time (counted and left to the raw samples)."""
        horizon = event_ns - self.max_late_ns
        late = [b for b in marked if b < done_ns and b + width_ns > horizon]
        too_late = sum(1 for b in marked if b < done_ns and b + width_ns <= horizon)
        if too_late:
            self.stats.too_late += too_late
            log.warning("%d rolled minute bucket(s) got samples more than %.0fs (event time) "
                        "late: they stay in the raw samples only", too_late,
                        self.max_late_ns / NS)
        return late

    def _roll(self, rollup: Rollup, late: list[int], done_ns: int, target_ns: int) -> _Rolled:
        """Re-roll the ``late`` buckets, then roll ``[done_ns, target_ns)`` (as much as one run
        may); returns how far it got."""
        store, name, width = self.store, rollup.name, rollup.bucket_ns
        rows = self._rows if rollup.parent is None else None
        starts: list[int] = []
        for lo, hi in roll_ranges(late, rollup):
            store.execute(roll_sql(store.dialect, store.database, rollup, lo, hi, rows))
            self.stats.statements += 1
            self.stats.rerolled[name] = self.stats.rerolled.get(name, 0) + (hi - lo) // width
            starts.extend(range(lo, hi, width))
        ranges, reached = self._forward(rollup, done_ns, target_ns)
        for lo, hi in ranges:
            store.execute(roll_sql(store.dialect, store.database, rollup, lo, hi, rows))
            self.stats.statements += 1
            self.stats.rolled[name] = self.stats.rolled.get(name, 0) + (hi - lo) // width
            starts.extend(range(lo, hi, width))
        return _Rolled(reached, starts)

    def _forward(self, rollup: Rollup, done_ns: int, target_ns: int,
                 ) -> tuple[list[tuple[int, int]], int]:
        """The ranges to roll from ``done_ns`` towards ``target_ns`` this run, and how far the
        watermark gets with them. One statement's worth is rolled as it is; a longer backlog
        (the job was away, a replay) only where inserts marked buckets, so stretches without
        data cost nothing, and at most :data:`MAX_STATEMENTS_PER_RUN` statements a run."""
        if target_ns <= done_ns:
            return [], done_ns
        span = statement_span(rollup)
        if target_ns - done_ns <= span:
            return [(done_ns, target_ns)], target_ns
        limit = MAX_STATEMENTS_PER_RUN * (span // rollup.bucket_ns)
        found = self.store.query(marked_buckets_sql(self.store.database, rollup.bucket_ns,
                                                    done_ns, target_ns, limit))
        marked = [int(b) for b in found["b"]]
        ranges = roll_ranges(marked, rollup)[:MAX_STATEMENTS_PER_RUN]
        complete = len(marked) < limit and len(ranges) == len(roll_ranges(marked, rollup))
        return ranges, (target_ns if complete or not ranges else ranges[-1][1])

    # -- the schedule -------------------------------------------------------------------------

    def _scheduled(self) -> None:
        try:
            self.run_once()
        except StoreError as exc:  # the next run redoes it
            self.stats.failures += 1
            log.error("rollup run failed (the next run redoes it): %s", exc)
        finally:
            self._next(self.settings.rollup_every_s)

    def _next(self, after_s: float) -> None:
        """The next run, ``after_s`` after this one ended: a run that outlasts the period delays
        the next instead of having APScheduler skip (and log) the beats it overlapped."""
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.add_job(self._scheduled, "date", id="rollup", replace_existing=True,
                              run_date=datetime.now(UTC) + timedelta(seconds=after_s))

    def start(self) -> None:
        if not self.needed or self._scheduler is not None:
            return
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(timezone="UTC", daemon=True)
        self._scheduler = scheduler
        self._next(0.0)
        scheduler.start()
        log.info("rollup job: every %.1fs, buckets complete %.0fs (event time) after their end, "
                 "late samples re-roll up to %.0fs back", self.settings.rollup_every_s,
                 self.lateness_ns / NS, self.max_late_ns / NS)

    def stop(self) -> None:
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.shutdown(wait=True)


def _with_followers(buckets: list[int], done_ns: int, width_ns: int) -> list[int]:
    """``buckets`` and the rolled buckets after each that reach back into it: those with an
    interval judged from samples within :data:`~pipeline.rates.rule.HORIZON_NS` before them."""
    reach = -(-HORIZON_NS // width_ns)
    return sorted({b + k * width_ns for b in buckets for k in range(reach + 1)
                   if b + k * width_ns < done_ns})


@dataclass(frozen=True)
class _Rolled:
    done_ns: int
    #: the buckets rolled (starts, ns)
    starts: list[int]

    @property
    def buckets(self) -> int:
        return len(self.starts)
