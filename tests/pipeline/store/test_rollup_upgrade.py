"""A store from before the rollup job (rollups written by materialised views into aggregate
states) is upgraded by its next migration on every backend: views gone, history kept, the
watermarks set where the history ends; rollup tables from before the rate rule get its columns."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.model import SampleBatch
from pipeline.store.base import Store, literal
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.read import watermarks
from pipeline.store.rollup.sql import dedup_select, floor_to
from pipeline.store.schema import ROLLUP_1H, ROLLUP_1M, ROLLUPS, SERIES_KEY

#: (column, aggregate function, its arguments, their types) of the old rollup tables
OLD_STATES = (("v_first", "argMin", "value, {ts}", "Float64, Int64"),
              ("v_last", "argMax", "value, {ts}", "Float64, Int64"),
              ("v_min", "min", "value", "Float64"), ("v_max", "max", "value", "Float64"),
              ("t_first", "min", "{ts}", "Int64"), ("t_last", "max", "{ts}", "Int64"),
              ("n", "uniqExact", "{ts}", "Int64"), ("flags_or", "groupBitOr", "flags", "UInt8"))



@pytest.fixture(params=["chdb", "clickhouse"])
def store(request: pytest.FixtureRequest) -> Any:
    """The single-server backends: on a cluster the store refuses to upgrade by itself
    (docs/deploy.md says how to do it by hand)."""
    return request.getfixturevalue(f"{request.param}_store")


def old_schema(store: Store) -> list[str]:
    """The rollup tables and views as the store created them before (the views here all read
    the samples, as they did on 18.16)."""
    d, db = store.dialect, store.database
    modern = d.name == "modern"
    ts = d.time_ns("ts")
    out = []
    for rollup in ROLLUPS:
        width = rollup.bucket_ns
        bucket_col = ("bucket DateTime64(9, 'UTC')" if modern else
                      "bucket_ns Int64, bucket DateTime('UTC') DEFAULT "
                      "toDateTime(intDiv(bucket_ns, 1000000000), 'UTC')")
        states = ", ".join(f"{name} AggregateFunction({fn}, {types})"
                           for name, fn, _, types in OLD_STATES)
        part = "toYYYYMMDD" if rollup.partition == "day" else "toYYYYMM"
        out.append(f"CREATE TABLE {db}.{rollup.name} ({bucket_col}, device LowCardinality(String), "
                   f"port LowCardinality(String), metric LowCardinality(String), qual Int16, "
                   f"{states}) ENGINE = AggregatingMergeTree PARTITION BY {part}(bucket) "
                   f"ORDER BY ({', '.join(SERIES_KEY)}, {d.stored('bucket')})")
        start = f"intDiv({ts}, {width}) * {width}"
        bucket = (f"fromUnixTimestamp64Nano({start}, 'UTC') AS bucket" if modern else
                  f"{start} AS bucket_ns, toDateTime(intDiv(bucket_ns, 1000000000), 'UTC') "
                  f"AS bucket")
        selected = ", ".join(f"{fn}State({args.format(ts=ts)}) AS {name}"
                             for name, fn, args, _ in OLD_STATES)
        out.append(f"CREATE MATERIALIZED VIEW {db}.{rollup.name}_mv TO {db}.{rollup.name} AS "
                   f"SELECT {bucket}, {', '.join(SERIES_KEY)}, {selected} FROM {db}.samples "
                   f"GROUP BY {', '.join(SERIES_KEY)}, {d.stored('bucket')}")
    return out


def rolled(store: Store, rollup: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    table = dedup_select(store.dialect, store.database, rollup, None, None)
    c = store.query(f"SELECT * FROM ({table})")
    keys = zip(c["device"], c["port"], c["metric"], c["qual"].tolist(), c["rb"].tolist(),
               strict=True)
    values = zip(*(c[k].tolist() for k in ("v0", "v1", "vmin", "vmax", "t0", "t1", "cnt",
                                           "fl")), strict=True)
    return dict(zip(keys, values, strict=True))


def test_an_upgrade_keeps_the_history_the_views_rolled(store: Store, batch: SampleBatch,
                                                       rollup_expectation: Any) -> None:
    db = store.database
    for rollup in ROLLUPS:
        store.execute(f"DROP TABLE {db}.{rollup.name}")
    for statement in old_schema(store):
        store.execute(statement)
    store.insert_samples(batch)  # the views roll it, as before
    store.insert_samples(batch)
    store.migrate()
    names = set(store.query(f"SELECT name FROM system.tables WHERE database = {literal(db)}")
                ["name"])
    assert not {n for n in names if n.endswith(("_mv", "_v1"))}, names
    for rollup in ROLLUPS:
        assert rolled(store, rollup) == rollup_expectation(batch, rollup.bucket_ns)
    last_minute = floor_to(int(batch.ts_ns.max()), ROLLUP_1M.bucket_ns)
    # the history reaches the end of its last minute; its last hour is rolled again from the
    # minutes once it is complete (it may hold more minutes by then)
    assert watermarks(store) == {ROLLUP_1M.name: last_minute + ROLLUP_1M.bucket_ns,
                                 ROLLUP_1H.name: floor_to(last_minute + ROLLUP_1M.bucket_ns,
                                                          ROLLUP_1H.bucket_ns)}
    store.migrate()  # once upgraded, a migration changes nothing
    assert watermarks(store)[ROLLUP_1M.name] == last_minute + ROLLUP_1M.bucket_ns
    for rollup in ROLLUPS:
        assert rolled(store, rollup) == rollup_expectation(batch, rollup.bucket_ns)


def test_rollup_tables_from_before_the_rate_rule_get_its_columns(store: Store,
                                                                 batch: SampleBatch) -> None:
    db = store.database
    store.insert_samples(batch)
    RollupJob(store, store.settings).catch_up(int(batch.ts_ns.max()) + 3 * ROLLUP_1H.bucket_ns)
    before = rolled(store, ROLLUP_1M)
    for rollup in ROLLUPS:  # the tables as they were before the rate rule
        for column in ("rated_inc", "rated_ns"):
            store.execute(f"ALTER TABLE {db}.{rollup.name} DROP COLUMN {column}")
    store.migrate()
    store.migrate()  # and once upgraded, again: nothing to do
    for rollup in ROLLUPS:
        c = store.query(f"SELECT name, type FROM system.columns WHERE database = {literal(db)} "
                        f"AND table = {literal(rollup.name)} AND name LIKE 'rated%'")
        assert dict(zip(c["name"], c["type"], strict=True)) == {"rated_inc": "Float64",
                                                                 "rated_ns": "Int64"}
    assert rolled(store, ROLLUP_1M) == before  # the history kept; its buckets have no rate
    c = store.query(f"SELECT max(ri) AS ri, max(rn) AS rn FROM "
                    f"({dedup_select(store.dialect, store.database, ROLLUP_1M, None, None)})")
    assert (c["ri"][0], c["rn"][0]) == (0.0, 0)
