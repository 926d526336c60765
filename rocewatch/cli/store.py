"""``rocewatch store ...``: the store's schema, server and retention, from the command line.

::

    rocewatch store ddl [--cluster NAME] [--version 18.16.1 | --connect]   the schema as SQL
    rocewatch store migrate                                                  apply it
    rocewatch store info                                                     server, dialect, tables
    rocewatch store retention [--apply]                                      expired partitions

``ddl`` renders without a server by default (for a DBA to review or apply with clickhouse-client
``--multiquery``); ``--connect`` asks the configured server its version instead of ``--version``.
"""

from __future__ import annotations

from typing import Any

import click

from pipeline.config import StoreSettings
from pipeline.store.base import literal
from pipeline.store.ddl import store_ddl
from pipeline.store.dialect import dialect_for_version

config_option = click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
                             envvar="ROCEWATCH_CONFIG", help="YAML config file.")


def _store_settings(config_path: str | None) -> StoreSettings:
    from rocewatch.settings import load_settings

    return load_settings(config_path).store


def _version(text: str) -> tuple[int, ...]:
    from pipeline.store.clickhouse import parse_version

    version = parse_version(text)
    if len(version) < 2:
        raise click.BadParameter(f"{text!r} is not a ClickHouse version such as 18.16.1",
                                 param_hint="--version")
    return version


@click.group("store")
def store() -> None:
    """The store: schema (also for a cluster), server, retention."""


@store.command("ddl")
@config_option
@click.option("--cluster", default=None,
              help="Render for this cluster (ReplicatedMergeTree + Distributed, ON CLUSTER); "
                   "default: store.clickhouse.cluster.")
@click.option("--version", "version_text", default="24.8",
              show_default=True, help="The ClickHouse server version to render for.")
@click.option("--connect", is_flag=True, help="Ask the configured server its version.")
@click.option("--database", default=None, help="Default: store.database.")
def ddl(config_path: str | None, cluster: str | None, version_text: str, connect: bool,
        database: str | None) -> None:
    """Print the schema as SQL statements for a ClickHouse server (or cluster)."""
    settings = _store_settings(config_path)
    cluster = settings.clickhouse.cluster if cluster is None else cluster
    if connect:
        from pipeline.store.clickhouse import ClickHouseStore

        server = ClickHouseStore(settings)
        dialect = server.dialect
        version_text = server.server_version
        server.close()
    else:
        dialect = dialect_for_version(_version(version_text),
                                      settings.clickhouse.legacy_low_cardinality)
    statements = store_ddl(dialect, settings, cluster, database)
    click.echo(f"-- rocewatch schema for ClickHouse {version_text} ({dialect.name} dialect)"
               + (f", cluster {cluster}" if cluster else ""))
    for name, value in dialect.settings.items():
        click.echo(f"SET {name} = {value};")
    for statement in statements:
        click.echo(f"{statement};\n")


@store.command("migrate")
@config_option
def migrate(config_path: str | None) -> None:
    """Create whatever of the schema is missing on the configured store."""
    from pipeline.store.base import open_store

    store_ = open_store(_store_settings(config_path))
    click.echo(f"{store_.database}: schema applied ({store_.dialect.name} dialect)")
    store_.close()


@store.command("info")
@config_option
def info(config_path: str | None) -> None:
    """The server's version, the dialect, and the tables with their rows on disk."""
    from pipeline.store.base import open_store

    settings = _store_settings(config_path)
    store_: Any = open_store(settings)
    version = getattr(store_, "server_version", "embedded chDB")
    click.echo(f"store: {settings.kind} {version}, {store_.dialect.name} dialect, "
               f"database {store_.database}")
    cols = store_.query(
        f"SELECT table, sum(rows) AS rows, sum(bytes) AS bytes, count() AS parts "
        f"FROM system.parts WHERE active AND database = {literal(store_.database)} "
        f"GROUP BY table ORDER BY table")
    for table, rows, size, parts in zip(cols["table"], cols["rows"], cols["bytes"],
                                        cols["parts"], strict=True):
        click.echo(f"  {table:<16} {int(rows):>14,} rows {int(size) / 2**20:>10.1f} MiB "
                   f"in {int(parts)} parts")
    store_.close()


@store.command("retention")
@config_option
@click.option("--apply", is_flag=True, help="Drop them (default: only list).")
def retention(config_path: str | None, apply: bool) -> None:
    """List (or drop) the partitions past retention, as the scheduled job would."""
    from datetime import UTC, datetime

    from pipeline.store.base import open_store
    from pipeline.store.retention import drop_expired, expired_partitions

    settings = _store_settings(config_path)
    store_ = open_store(settings)
    today = datetime.now(UTC).date()
    expired = expired_partitions(store_, settings, today)
    for table, partition in expired:
        click.echo(f"{'drop' if apply else 'expired'}  {table} {partition}")
    if apply:
        click.echo(f"dropped {drop_expired(store_, settings, today)} partition(s)")
    elif not expired:
        click.echo("nothing past retention")
    store_.close()
