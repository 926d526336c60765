"""The model and the DDL stay together; every dialect renders every logical type."""

from __future__ import annotations

import dataclasses
import re

from pipeline.model import ActionResult, Alert, SampleBatch
from pipeline.store.base import action_columns, alert_columns
from pipeline.store.dialect import LEGACY, LEGACY_STRING, MODERN
from pipeline.store.schema import (
    ACTIONS,
    ALERTS,
    ROLLUP_AGGREGATES,
    ROLLUP_MARKS,
    ROLLUP_STATE,
    ROLLUP_TABLES,
    ROLLUP_VERSION,
    ROLLUPS,
    SAMPLES,
    SERIES_KEY,
    TABLES,
)

NS = 1_000_000_000
TIME_FIELDS = {"ts_ns", "starts_ns", "updated_ns", "ends_ns", "at_ns"}
#: columns computed from the model rather than stored in a field
DERIVED = {"fingerprint", "status"}
#: batch fields that are encodings (vocabularies), not columns
VOCABULARIES = {"devices", "ports"}


def column_of(field: str) -> str:
    """One name for each thing: a time field ``<name>_ns`` is the time column ``<name>`` (whose
    legacy rendering stores the nanoseconds as ``<name>_ns`` again); every other field keeps its
    name."""
    return field.removesuffix("_ns") if field in TIME_FIELDS else field


def test_time_fields_are_the_tables_time_columns() -> None:
    times = {c.name for t in TABLES for c in t.columns if c.type == "time"}
    assert times == {column_of(f) for f in TIME_FIELDS}
    assert {LEGACY.stored(c) for c in times} == TIME_FIELDS


def test_sample_batch_fields_are_the_samples_columns() -> None:
    fields = [f.name for f in dataclasses.fields(SampleBatch) if f.name not in VOCABULARIES]
    assert [column_of(f) for f in fields] == SAMPLES.column_names()


def test_alert_fields_are_the_alerts_columns() -> None:
    fields = {column_of(f) for f in Alert.model_fields}
    columns = set(ALERTS.column_names())
    assert fields == columns - DERIVED
    assert list(alert_columns([])) == ALERTS.column_names()


def test_action_fields_are_the_actions_columns() -> None:
    fields = {column_of(f) for f in ActionResult.model_fields}
    assert fields == set(ACTIONS.column_names())
    assert list(action_columns([])) == ACTIONS.column_names()


def _columns(ddl: str) -> list[str]:
    body = ddl[ddl.index("(") + 1: ddl.index("\n)")]
    return [line.strip().split()[0] for line in body.strip().splitlines()]


def test_every_dialect_renders_every_column_of_every_table() -> None:
    for dialect in (MODERN, LEGACY, LEGACY_STRING):
        for table in TABLES:
            ddl = dialect.create_table("db", table, 14)
            want = []
            for c in table.columns:
                if c.type == "time" and dialect.name == "legacy":
                    want.append(f"{c.name}_ns")
                    if c.name == table.time_column:
                        want.append(c.name)
                else:
                    want.append(c.name)
            assert _columns(ddl) == want
            assert dialect.insert_columns(table) == [w for w in want if not (
                dialect.name == "legacy" and w == table.time_column)]


def test_the_legacy_rendering_uses_only_what_18_16_has() -> None:
    text = "\n".join(LEGACY.schema("db", 14, {"samples_1m": 90, "samples_1h": 730}))
    for missing in ("TTL", "CODEC", "DateTime64", "toStartOfInterval", "SETTINGS",
                    "Map(", "fromUnixTimestamp64Nano", "toUnixTimestamp64Nano"):
        assert missing not in text, missing
    # 18.16 forwards no materialised column through a view's TO table or a Distributed table
    assert " MATERIALIZED " not in text.replace("MATERIALIZED VIEW", "")
    assert "LowCardinality(String)" in text
    assert "LowCardinality" not in "\n".join(LEGACY_STRING.schema("db", 14, {
        "samples_1m": 90, "samples_1h": 730}))
    assert LEGACY.settings == {"allow_experimental_low_cardinality_type": 1}
    assert LEGACY_STRING.settings == {}


def test_the_modern_rendering_has_ttl_codecs_and_block_dedup() -> None:
    ddl = MODERN.create_table("db", SAMPLES, 7)
    assert "TTL toDateTime(ts) + INTERVAL 7 DAY" in ddl
    assert "DateTime64(9, 'UTC')" in ddl and "CODEC(Gorilla" in ddl
    assert "non_replicated_deduplication_window" in ddl
    assert "non_replicated_deduplication_window" not in MODERN.create_table(
        "db", SAMPLES, 7, cluster="c")  # replicated tables deduplicate blocks themselves


def test_samples_are_keyed_by_series_and_event_time() -> None:
    assert SAMPLES.order_by == (*SERIES_KEY, "ts")
    for dialect in (MODERN, LEGACY):
        ddl = dialect.create_table("db", SAMPLES, 14)
        assert "ENGINE = ReplacingMergeTree" in ddl
        assert f"ORDER BY (device, port, metric, qual, {dialect.stored('ts')})" in ddl


def test_rollups_are_one_replaceable_row_per_series_and_bucket() -> None:
    for rollup in ROLLUPS:
        table = rollup.table
        assert table.order_by == (*SERIES_KEY, "bucket") and table.version == ROLLUP_VERSION
        assert [c.name for c in table.columns] == ["bucket", *SERIES_KEY,
                                                   *(a.name for a in ROLLUP_AGGREGATES)]
        for dialect in (MODERN, LEGACY):
            ddl = dialect.create_table("db", table, 90)
            assert f"ENGINE = ReplacingMergeTree({ROLLUP_VERSION})" in ddl
            assert "AggregateFunction" not in ddl
            assert f"ORDER BY (device, port, metric, qual, {dialect.stored('bucket')})" in ddl
            part = "toYYYYMMDD" if rollup.partition == "day" else "toYYYYMM"
            assert f"PARTITION BY {part}(bucket)" in ddl


def test_every_aggregate_reads_and_folds_under_its_own_names() -> None:
    """A rollup column is computed under its read name and folded from read names: no alias
    may shadow a column the same SELECT aggregates (ClickHouse resolves aliases everywhere)."""
    reads = {a.read for a in ROLLUP_AGGREGATES}
    names = {a.name for a in ROLLUP_AGGREGATES}
    assert len(reads) == len(ROLLUP_AGGREGATES) and not reads & names
    for agg in ROLLUP_AGGREGATES:
        folded = re.findall(r"\w+", agg.fold.split("(", 1)[1])
        assert set(folded) <= reads, agg
        assert not set(re.findall(r"\w+", agg.from_samples.split("(", 1)[1])) & reads, agg


def test_the_rollup_bookkeeping_is_rendered_with_the_rollups() -> None:
    with_rollups = "\n".join(MODERN.schema("db", 14, {"samples_1m": 90, "samples_1h": 730}))
    for table in ROLLUP_TABLES:
        assert f"CREATE TABLE IF NOT EXISTS db.{table.name} (" in with_rollups
    assert "VIEW" not in with_rollups
    without = "\n".join(MODERN.schema("db", 14, {}, rollups=()))
    assert not any(t.name in without for t in (*ROLLUP_TABLES, *(r.table for r in ROLLUPS)))
    state = LEGACY.create_table("db", ROLLUP_STATE, 14)
    assert "PARTITION BY tuple()" in state and "ReplacingMergeTree(scanned)" in state
    marks = MODERN.create_table("db", ROLLUP_MARKS, 14)
    assert "ENGINE = MergeTree\n" in marks and "DEFAULT now()" in marks
    assert "deduplication" not in marks  # the job counts marks: none may be dropped
    assert MODERN.insert_columns(ROLLUP_MARKS) == ["bucket_ns", "event_ns"]


def test_time_ranges_let_legacy_servers_skip_parts() -> None:
    lo, hi = 1_700_000_000 * NS + 5, 1_700_000_060 * NS
    assert LEGACY.time_range("ts", lo, hi) == [
        f"ts_ns >= toInt64({lo})", "ts >= toDateTime(1700000000, 'UTC')",
        f"ts_ns < toInt64({hi})", "ts <= toDateTime(1700000059, 'UTC')"]
    assert MODERN.time_range("ts", lo, None) == [
        f"ts >= fromUnixTimestamp64Nano(toInt64({lo}), 'UTC')"]
    assert LEGACY.time_range("ts", 0, None) == ["ts_ns >= toInt64(0)"]
