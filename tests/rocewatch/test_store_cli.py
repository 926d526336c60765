"""``rocewatch store ...``: schema rendering (also for clusters), and the commands on a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from rocewatch.cli.store import store


def test_ddl_for_a_legacy_cluster_without_a_server() -> None:
    result = CliRunner().invoke(store, ["ddl", "--cluster", "fabric", "--version", "18.16.1"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("-- rocewatch schema for ClickHouse 18.16.1 (legacy dialect), "
                          "cluster fabric")
    assert "SET allow_experimental_low_cardinality_type = 1;" in out
    assert out.count("ON CLUSTER fabric") == out.count("CREATE ")
    assert "ENGINE = Distributed(fabric, rocewatch, samples_local, cityHash64(device));" in out
    assert "TTL" not in out


def test_ddl_for_a_modern_single_server() -> None:
    result = CliRunner().invoke(store, ["ddl", "--version", "24.8.4", "--database", "rw"])
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE IF NOT EXISTS rw.samples (" in result.output
    assert "TTL toDateTime(ts) + INTERVAL 14 DAY" in result.output
    assert "ON CLUSTER" not in result.output and "SET " not in result.output
    assert "ENGINE = ReplacingMergeTree(n)" in result.output  # rollups, rolled by a job
    assert "MATERIALIZED VIEW" not in result.output
    assert "CREATE VIEW IF NOT EXISTS rw.port_rates AS SELECT" in result.output  # docs/sql.md


def test_a_bad_version_is_refused() -> None:
    result = CliRunner().invoke(store, ["ddl", "--version", "latest"])
    assert result.exit_code != 0 and "not a ClickHouse version" in result.output


def _config(tmp_path: Path, address: tuple[str, int], database: str) -> str:
    path = tmp_path / "rocewatch.yaml"
    path.write_text(yaml.safe_dump({"store": {"kind": "clickhouse", "database": database,
                                              "clickhouse": {"host": address[0],
                                                             "port": address[1]}}}))
    return str(path)


def test_migrate_info_and_retention_on_the_server(tmp_path: Path,
                                                  clickhouse_address: tuple[str, int],
                                                  unique_name: Any) -> None:
    database = unique_name("db")
    config = _config(tmp_path, clickhouse_address, database)
    runner = CliRunner()
    try:
        migrated = runner.invoke(store, ["migrate", "-c", config])
        assert migrated.exit_code == 0, migrated.output
        connected = runner.invoke(store, ["ddl", "-c", config, "--connect"])
        assert connected.exit_code == 0, connected.output
        assert "CREATE TABLE IF NOT EXISTS " + database + ".samples (" in connected.output
        info = runner.invoke(store, ["info", "-c", config])
        assert info.exit_code == 0, info.output
        assert f"database {database}" in info.output
        retention = runner.invoke(store, ["retention", "-c", config])
        assert retention.exit_code == 0 and "nothing past retention" in retention.output
    finally:
        from pipeline.store.base import open_store
        from rocewatch.settings import load_settings

        s = open_store(load_settings(config).store)
        s.execute(f"DROP DATABASE IF EXISTS {database}")
        s.close()
