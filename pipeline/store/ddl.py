"""Every statement that creates a store, in order: the tables and rollups of the schema
(:meth:`pipeline.store.dialect.Dialect.schema`), then the plain-SQL views over them
(:mod:`pipeline.store.views`). The stores' ``migrate`` and ``rocewatch store ddl`` run this."""

from __future__ import annotations

from pipeline.config import StoreSettings
from pipeline.store.base import kept_rollups, rollup_retention
from pipeline.store.dialect import Dialect
from pipeline.store.views import VIEWS, view_ddl


def store_ddl(dialect: Dialect, settings: StoreSettings, cluster: str = "",
              database: str | None = None) -> list[str]:
    """The statements for a store of these settings on this engine (``cluster``: rendered for
    a cluster, ``ON CLUSTER``)."""
    db = database or settings.database
    rollups = kept_rollups(settings)
    return [*dialect.schema(db, settings.retention_days, rollup_retention(settings), cluster,
                            rollups=rollups),
            *view_ddl(dialect, db, cluster, rolled=bool(rollups))]


def view_names() -> list[str]:
    return [v.name for v in VIEWS]
