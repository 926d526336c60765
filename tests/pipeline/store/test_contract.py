"""The store contract: the same tests on chDB, on the ClickHouse server (18.16 here) and on the
ClickHouse cluster (2 shards x 2 replicas of 18.16, through its Distributed tables).

Every query is built through the store's dialect, and its answer is checked against what the
batch says in Python, so a backend that renders the schema or a query differently fails here.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest

from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.store.base import Store, literal
from pipeline.store.ddl import view_names
from pipeline.store.dialect import local_name
from pipeline.store.rollup import read as rollup_read
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.sql import dedup_select
from pipeline.store.schema import (
    ROLLUP_1H,
    ROLLUP_1M,
    ROLLUP_TABLES,
    ROLLUPS,
    Rollup,
    stored_tables,
)

NS = 1_000_000_000


def count_final(store: Store) -> int:
    """Distinct samples: FINAL collapses repeats that no merge has removed yet."""
    return int(store.query(f"SELECT count() AS n FROM {store.database}.samples FINAL")["n"][0])


def rows_sql(store: Store, lo_ns: int, hi_ns: int) -> str:
    d = store.dialect
    return (f"SELECT device, port, metric, qual, {d.time_ns('ts')} AS t, value, flags "
            f"FROM {store.database}.samples FINAL "
            f"WHERE {d.time_cmp('ts')} >= {d.ns_to_time(lo_ns)} "
            f"AND {d.time_cmp('ts')} < {d.ns_to_time(hi_ns)} "
            f"ORDER BY device, port, metric, qual, t")


def rollup_sql(store: Store, rollup: Rollup, rows: str | None = None) -> str:
    """A rollup's rows as readers see them (``rows``: another relation of the same shape)."""
    return (f"SELECT device, port, metric, qual, rb AS b, v0, v1, vmin, vmax, t0, t1, cnt AS n, "
            f"fl FROM {rows or rollup_read.rollup_rows(store, rollup)} "
            f"ORDER BY device, port, metric, qual, b")


def rollup_rows(store: Store, rollup: Rollup,
                rows: str | None = None) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    c = store.query(rollup_sql(store, rollup, rows))
    keys = zip(c["device"], c["port"], c["metric"], c["qual"].tolist(), c["b"].tolist(),
               strict=True)
    values = zip(c["v0"].tolist(), c["v1"].tolist(), c["vmin"].tolist(), c["vmax"].tolist(),
                 c["t0"].tolist(), c["t1"].tolist(), c["n"].tolist(), c["fl"].tolist(),
                 strict=True)
    return dict(zip(keys, values, strict=True))


def rolled_rows(store: Store, rollup: Rollup) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """What the rollup table itself holds (one row per key, as merges keep)."""
    table = f"({dedup_select(store.dialect, store.database, rollup, None, None)})"
    return rollup_rows(store, rollup, table)


def test_samples_round_trip_in_columns(store: Store, batch: SampleBatch) -> None:
    assert store.insert_samples(batch) == len(batch)
    lo, hi = int(batch.ts_ns.min()), int(batch.ts_ns.max()) + 1
    got = store.query(rows_sql(store, lo, hi))
    want = sorted(batch.rows(), key=lambda r: (r[1], r[2], r[3], r[4], r[0]))
    assert got["t"].dtype == np.int64 and got["value"].dtype == np.float64
    assert got["device"].dtype == object and got["qual"].dtype == np.int16
    assert list(zip(got["t"].tolist(), got["device"], got["port"], got["metric"],
                    got["qual"].tolist(), got["value"].tolist(), got["flags"].tolist(),
                    strict=True)) == want


def test_a_time_range_selects_by_event_time(store: Store, batch: SampleBatch) -> None:
    store.insert_samples(batch)
    lo = int(batch.ts_ns.min()) + 60 * NS
    hi = lo + 30 * NS
    got = store.query(rows_sql(store, lo, hi))
    inside = (batch.ts_ns >= lo) & (batch.ts_ns < hi)
    assert len(got["t"]) == int(inside.sum()) > 0
    assert got["t"].min() >= lo and got["t"].max() < hi


def test_repeated_inserts_collapse_to_one_copy(store: Store, batch: SampleBatch,
                                               merge: Any) -> None:
    store.insert_samples(batch)
    store.insert_samples(batch)  # the same batch again (a retry)
    # a redelivery with other batch boundaries: the second half again, split differently
    half = batch.take(np.arange(len(batch) // 2, len(batch)))
    store.insert_samples(half.take(np.arange(0, len(half), 2)))
    store.insert_samples(half.take(np.arange(1, len(half), 2)))
    assert count_final(store) == len(batch)
    d = store.dialect
    distinct = store.query(
        f"SELECT count() AS n FROM (SELECT device, port, metric, qual, {d.time_ns('ts')} AS t "
        f"FROM {store.database}.samples GROUP BY device, port, metric, qual, t)")
    assert int(distinct["n"][0]) == len(batch)
    merge(store, "samples")
    raw = store.query(f"SELECT count() AS n FROM {store.database}.samples")
    assert int(raw["n"][0]) == len(batch), "merging left duplicates behind"


@pytest.mark.parametrize("rollup", ROLLUPS, ids=lambda r: r.name)
def test_rollups_hold_first_last_min_max_and_counts(store: Store, batch: SampleBatch,
                                                    rollup: Rollup,
                                                    rollup_expectation: Any) -> None:
    store.insert_samples(batch)
    store.insert_samples(batch.take(np.arange(0, len(batch), 3)))  # a partial redelivery
    want = rollup_expectation(batch, rollup.bucket_ns)
    assert rollup_rows(store, rollup) == want  # nothing rolled yet: read from the samples
    assert rolled_rows(store, rollup) == {}
    end = int(batch.ts_ns.max()) + 2 * 3600 * NS
    RollupJob(store, store.settings).run_once(event_ns=end)
    assert rolled_rows(store, rollup) == want
    assert rollup_rows(store, rollup) == want


def test_latest_values_per_series(store: Store, batch: SampleBatch) -> None:
    store.insert_samples(batch)
    store.insert_samples(batch)
    d = store.dialect
    got = store.query(
        f"SELECT device, port, metric, qual, argMax(value, t) AS v, max(t) AS last FROM "
        f"(SELECT device, port, metric, qual, value, {d.time_ns('ts')} AS t "
        f"FROM {store.database}.samples WHERE metric = {literal('queue_occupancy_bytes')}) "
        f"GROUP BY device, port, metric, qual ORDER BY device, port")
    want: dict[tuple[str, str], tuple[int, float]] = {}
    for ts, dev, port, metric, _, value, _ in batch.rows():
        if metric == "queue_occupancy_bytes" and ts >= want.get((dev, port), (0, 0.0))[0]:
            want[(dev, port)] = (ts, value)
    assert {(dv, p): (t, v) for dv, p, t, v in zip(got["device"], got["port"],
                                                    got["last"].tolist(), got["v"].tolist(),
                                                    strict=True)} == want


def test_an_empty_result_keeps_its_columns_and_types(store: Store) -> None:
    d = store.dialect
    got = store.query(f"SELECT device, qual, value, {d.time_ns('ts')} AS t "
                      f"FROM {store.database}.samples WHERE qual = 99")
    assert list(got) == ["device", "qual", "value", "t"]
    assert [len(c) for c in got.values()] == [0, 0, 0, 0]
    assert got["value"].dtype == np.float64 and got["t"].dtype == np.int64


def _alert(now: int, **kw: Any) -> Alert:
    base: dict[str, Any] = dict(
        name="PfcStorm", entity="leaf0:Ethernet0", severity=Severity.CRITICAL,
        labels={"device": "leaf0", "port": "Ethernet0"}, annotations={"summary": "pauses"},
        evidence={"pause_ratio": 0.7}, ports=("leaf0:Ethernet0", "spine0:Ethernet4"),
        explains=("abc",), starts_ns=now, updated_ns=now)
    base.update(kw)
    return Alert(**base)


def alerts_sql(store: Store) -> str:
    d = store.dialect
    return (f"SELECT fingerprint, name, status, {d.time_ns('starts')} AS starts, "
            f"{d.time_ns('ends')} AS ends, ports, explains, labels, evidence, root_cause "
            f"FROM {store.database}.alerts FINAL ORDER BY {d.time_ns('updated')}")


def test_alerts_round_trip_and_repeats_collapse(store: Store) -> None:
    now = (time.time_ns() // NS) * NS
    firing = _alert(now)
    resolved = _alert(now, updated_ns=now + 5 * NS, ends_ns=now + 5 * NS)
    store.insert_alerts([firing])
    store.insert_alerts([firing, resolved])  # the first delivered twice
    got = store.query(alerts_sql(store))
    assert list(got["status"]) == ["firing", "resolved"]
    assert list(got["fingerprint"]) == [firing.fingerprint] * 2
    assert got["starts"].tolist() == [now, now]
    assert got["ends"].tolist() == [0, now + 5 * NS]
    assert list(got["ports"][0]) == ["leaf0:Ethernet0", "spine0:Ethernet4"]
    assert list(got["explains"][1]) == ["abc"]
    assert json.loads(got["labels"][0]) == firing.labels
    assert json.loads(got["evidence"][0]) == {"pause_ratio": 0.7}


def test_actions_round_trip(store: Store) -> None:
    now = (time.time_ns() // NS) * NS
    action = ActionResult(action="drain", target="leaf0:Ethernet0", outcome="done", mode="auto",
                          steps=({"step": "te", "ok": True},), at_ns=now)
    store.insert_actions([action, action])
    d = store.dialect
    got = store.query(f"SELECT id, action, outcome, mode, steps, {d.time_ns('at')} AS at "
                      f"FROM {store.database}.actions FINAL")
    assert list(got["id"]) == [action.id]
    assert got["at"].tolist() == [now]
    assert json.loads(got["steps"][0]) == [{"step": "te", "ok": True}]


def test_the_schema_is_applied_again_without_harm(store: Store, batch: SampleBatch) -> None:
    store.insert_samples(batch)
    store.migrate()
    assert count_final(store) == len(batch)
    tables = store.query(f"SELECT name FROM system.tables WHERE database = "
                         f"{literal(store.database)} ORDER BY name")
    names = set(tables["name"])
    logical = {t.name for t in stored_tables()}
    assert {"samples", "alerts", "actions", ROLLUP_1M.name, ROLLUP_1H.name,
            *(t.name for t in ROLLUP_TABLES)} <= logical
    cluster = getattr(store, "cluster", "")  # a cluster adds each table's shards
    assert names == logical | {local_name(n, cluster) for n in logical} | set(view_names())


def test_both_backends_answer_alike(chdb_store: Store, clickhouse_store: Store,
                                    batch: SampleBatch) -> None:
    for store in (chdb_store, clickhouse_store):
        store.insert_samples(batch)
        store.insert_samples(batch)
        # the same half of the minutes rolled on both
        RollupJob(store, store.settings).run_once(
            event_ns=int(batch.ts_ns.min()) + 90 * NS)
    lo, hi = int(batch.ts_ns.min()), int(batch.ts_ns.max()) + 1
    def rows(store: Store) -> str:
        return rows_sql(store, lo, hi)

    def minutes(store: Store) -> str:
        return rollup_sql(store, ROLLUP_1M)

    def rolled(store: Store) -> str:
        table = f"({dedup_select(store.dialect, store.database, ROLLUP_1M, None, None)})"
        return rollup_sql(store, ROLLUP_1M, table)

    for build in (rows, minutes, rolled):
        a, b = chdb_store.query(build(chdb_store)), clickhouse_store.query(build(clickhouse_store))
        assert list(a) == list(b)
        for name in a:
            assert a[name].tolist() == b[name].tolist(), name
