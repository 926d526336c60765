"""Retention on engines without TTL (ClickHouse 18.16): drop whole expired partitions.

Raw tables are partitioned by day (``toYYYYMMDD``), the 1-minute rollup by day and the 1-hour
rollup by month (``toYYYYMM``); the rollup job's marks by day, kept as long as the raw samples
(its state table is one partition that never expires). A partition is dropped once its last day
is older than the table's retention; the job reads the active partitions from ``system.parts``
and is safe to run from several processes at once (dropping a partition that is gone is a
no-op). It runs at start and then every ``retention_check_s`` from an apscheduler background
job; engines with TTL skip it.

On a cluster the partitions are those of the ``_local`` tables on every shard
(``cluster(<name>, system, parts)`` reads one replica of each), and a partition is dropped
``ON CLUSTER``: each shard's replicas drop it once, through its replication log. An ON CLUSTER
drop waits for every server for a bounded time
(:data:`pipeline.store.clickhouse.CLUSTER_DDL_TIMEOUT_S`), then fails the run; a server that was
down drops it from the cluster's DDL queue when it returns.
"""

from __future__ import annotations

import calendar
import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pipeline.config import StoreSettings
from pipeline.errors import StoreError
from pipeline.store.base import Store, literal, rollup_retention
from pipeline.store.dialect import local_name
from pipeline.store.schema import ROLLUP_MARKS, TABLES

log = logging.getLogger("rocewatch.retention")


def last_day(partition: str) -> date | None:
    """The last day a ``YYYYMMDD`` or ``YYYYMM`` partition id covers (None if neither)."""
    try:
        if len(partition) == 8:
            return datetime.strptime(partition, "%Y%m%d").date()
        if len(partition) == 6:
            year, month = int(partition[:4]), int(partition[4:])
            return date(year, month, calendar.monthrange(year, month)[1])
    except ValueError:
        return None
    return None


def retention_days(settings: StoreSettings) -> dict[str, int]:
    """Days kept, by table name."""
    days = {t.name: settings.retention_days for t in (*TABLES, ROLLUP_MARKS) if t.expires}
    days.update(rollup_retention(settings))
    return days


def expired_partitions(store: Store, settings: StoreSettings, today: date) -> list[tuple[str, str]]:
    """``(table, partition)`` pairs whose whole range is older than the table's retention."""
    days = retention_days(settings)
    cluster = _cluster(store)
    local = {local_name(name, cluster): name for name in days}
    source = f"cluster({cluster}, system, parts)" if cluster else "system.parts"
    parts = store.query(
        f"SELECT DISTINCT table, partition FROM {source} WHERE active "
        f"AND database = {literal(store.database)} "
        f"AND table IN ({', '.join(literal(n) for n in local)})")
    out = []
    for table, partition in zip(parts.get("table", []), parts.get("partition", []), strict=True):
        end = last_day(str(partition).strip("'"))
        keep = days[local[str(table)]]
        if end is not None and end < today - timedelta(days=keep):
            out.append((str(table), str(partition).strip("'")))
    return sorted(out)


def drop_expired(store: Store, settings: StoreSettings, today: date | None = None) -> int:
    """Drop every expired partition; returns how many were dropped."""
    today = today or datetime.now(UTC).date()
    cluster = _cluster(store)
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    dropped = 0
    for table, partition in expired_partitions(store, settings, today):
        try:
            store.execute(f"ALTER TABLE {store.database}.{table}{on_cluster} DROP PARTITION "
                          f"{literal(partition) if not partition.isdigit() else partition}")
        except StoreError as exc:
            log.error("retention: cannot drop %s partition %s: %s", table, partition, exc)
            continue
        log.info("retention: dropped %s partition %s", table, partition)
        dropped += 1
    return dropped


def _cluster(store: Store) -> str:
    """The cluster a store writes through (``""``: one server, or chDB)."""
    return str(getattr(store, "cluster", ""))


class RetentionJob:
    """The scheduled partition dropper for one store (a no-op where the engine has TTL)."""

    def __init__(self, store: Store, settings: StoreSettings) -> None:
        self.store = store
        self.settings = settings
        self.runs = 0
        self.dropped = 0
        self._scheduler: Any = None

    @property
    def needed(self) -> bool:
        return not self.store.dialect.ttl

    def run_once(self) -> None:
        try:
            self.dropped += drop_expired(self.store, self.settings)
        except StoreError as exc:  # the next run tries again
            log.error("retention run failed: %s", exc)
        self.runs += 1

    def start(self) -> None:
        if not self.needed or self._scheduler is not None:
            return
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(timezone="UTC", daemon=True)
        scheduler.add_job(self.run_once, "interval", seconds=self.settings.retention_check_s,
                          next_run_time=datetime.now(UTC), id="retention",
                          max_instances=1, coalesce=True)
        scheduler.start()
        self._scheduler = scheduler
        log.info("retention job: every %.0fs, drops partitions past %s",
                 self.settings.retention_check_s, retention_days(self.settings))

    def stop(self) -> None:
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.shutdown(wait=False)
