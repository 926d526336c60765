"""Upgrading a store whose rollups were materialised views (up to 2026-11): keep their history.

Those stores hold ``samples_1m_mv`` / ``samples_1h_mv`` views writing aggregate states into
``AggregatingMergeTree`` rollup tables. :func:`prepare_upgrade` (before the schema is applied)
drops the views and renames such a table aside (``<name>_v1``); :func:`finish_upgrade` (after)
folds its states into the new table, records the watermarks the rolled history reaches, and
drops the old table. A crash in between is finished by the next migration: a renamed-aside table
is converted again, and the rows it already gave collapse (same key, same count).

Rollup tables from before the rate rule's columns (``rated_inc``, ``rated_ns``:
:mod:`pipeline.rates`) get them added; their older rows have no rates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pipeline.errors import StoreError
from pipeline.store.base import Store, literal
from pipeline.store.rollup.sql import State, floor_to, state_insert
from pipeline.store.schema import ROLLUPS, SERIES_KEY, Column, Rollup

log = logging.getLogger("rocewatch.store")

#: how each rollup column was read from its aggregate state
_MERGE = {"v_first": "argMinMerge", "v_last": "argMaxMerge", "v_min": "minMerge",
          "v_max": "maxMerge", "t_first": "minMerge", "t_last": "maxMerge",
          "n": "uniqExactMerge", "flags_or": "groupBitOrMerge"}


@dataclass
class Upgrade:
    """The rollups whose old tables were renamed aside, to be converted."""

    converted: list[Rollup] = field(default_factory=list)


def _old(rollup: Rollup) -> str:
    return f"{rollup.name}_v1"


def prepare_upgrade(store: Store, rollups: tuple[Rollup, ...]) -> Upgrade:
    """Drop the old rollup views and rename old-shaped rollup tables aside."""
    db = store.database
    tables = store.query(f"SELECT name FROM system.tables WHERE database = {literal(db)}")
    names = {str(n) for n in tables.get("name", ())}
    upgrade = Upgrade()
    if not names:
        return upgrade  # a new store
    cluster = str(getattr(store, "cluster", ""))
    views = [f"{r.name}_mv" for r in ROLLUPS] + [f"{r.name}_mv_local" for r in ROLLUPS]
    old = store.query(
        f"SELECT table FROM system.columns WHERE database = {literal(db)} AND name = 'v_first' "
        f"AND type LIKE 'AggregateFunction%'")
    old_tables = {str(t) for t in old.get("table", ())}
    if cluster and (old_tables or names & set(views)):
        raise StoreError(f"{db} on cluster {cluster} still has the rollup views of an older "
                         f"rocewatch: drop them and convert the rollup tables by hand "
                         f"(docs/deploy.md, 'Upgrading the rollups')")
    for view in views:
        if view in names:
            store.execute(f"DROP TABLE IF EXISTS {db}.{view}")
            log.warning("upgrade: dropped the rollup view %s.%s (a scheduled job rolls up now)",
                        db, view)
    _add_rate_columns(store, rollups, names - old_tables, cluster)
    for rollup in rollups:
        if rollup.name in old_tables:
            store.execute(f"RENAME TABLE {db}.{rollup.name} TO {db}.{_old(rollup)}")
            upgrade.converted.append(rollup)
        elif _old(rollup) in names:  # renamed by a migration that did not finish
            upgrade.converted.append(rollup)
    return upgrade


def _add_rate_columns(store: Store, rollups: tuple[Rollup, ...], tables: set[str],
                      cluster: str) -> None:
    """Give rollup tables from before the rate rule's columns (``rated_inc``, ``rated_ns``) the
    columns. Their rows read 0 there, which is "no rate": rates from a rollup start with the
    buckets rolled after the upgrade (the raw samples answer before that)."""
    db = store.database
    for rollup in rollups:
        if rollup.name not in tables:
            continue
        cols = store.query(f"SELECT name FROM system.columns WHERE database = {literal(db)} "
                           f"AND table = {literal(rollup.name)}")
        have = {str(n) for n in cols.get("name", ())}
        missing = [a for a in rollup.aggregates if a.name not in have]
        if missing and cluster:
            raise StoreError(f"{db}.{rollup.name} on cluster {cluster} lacks the columns "
                             f"{', '.join(a.name for a in missing)}: add them to the local and "
                             f"distributed tables by hand (docs/deploy.md, 'Upgrading the "
                             f"rollups')")
        for a in missing:
            ddl = store.dialect.column_ddl(Column(a.name, a.type))[0]
            store.execute(f"ALTER TABLE {db}.{rollup.name} ADD COLUMN {ddl}")
            log.warning("upgrade: added %s to %s.%s (buckets rolled before have no rates)",
                        a.name, db, rollup.name)


def finish_upgrade(store: Store, upgrade: Upgrade) -> None:
    """Fill the new rollup tables from the renamed ones, record how far they reach, drop them."""
    if not upgrade.converted:
        return
    d, db = store.dialect, store.database
    states: dict[str, State] = {}
    for rollup in upgrade.converted:
        bucket = d.stored("bucket")
        # the views kept no rated increases: those columns keep their default (no rate)
        kept = [a for a in rollup.aggregates if a.name in _MERGE]
        merged = ", ".join(f"{_MERGE[a.name]}({a.name})" for a in kept)
        keys = ", ".join(SERIES_KEY)
        columns = [d.stored("bucket"), *SERIES_KEY, *(a.name for a in kept)]
        store.execute(
            f"INSERT INTO {db}.{rollup.name} ({', '.join(columns)}) "
            f"SELECT {bucket}, {keys}, {merged} FROM {db}.{_old(rollup)} "
            f"GROUP BY {keys}, {bucket}")
        reach = store.query(f"SELECT count() AS rows, max({d.time_ns('bucket')}) AS last, "
                            f"maxMerge(t_last) AS event FROM {db}.{_old(rollup)}")
        if int(reach["rows"][0]) and rollup.parent is None:
            done = int(reach["last"][0]) + rollup.bucket_ns
            states[rollup.name] = State(done, 0, int(reach["event"][0]))
        store.execute(f"DROP TABLE {db}.{_old(rollup)}")
        log.warning("upgrade: %s.%s converted to rows rolled by the rollup job", db, rollup.name)
    root = next(iter(states.values()), None)
    if root is None:
        return
    for rollup in ROLLUPS:
        if rollup.parent is not None and rollup in upgrade.converted:
            # an hour that history only partly rolled is rolled again from its minutes
            states[rollup.name] = State(floor_to(root.done_ns, rollup.bucket_ns), 0,
                                        root.event_ns)
    store.execute(state_insert(db, states))
