"""Fixtures of the read side: a session's faulty-fabric store and a live API over it on loopback.

The store lives in the session's one chDB directory (``chdb_dir``), in a database of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.config import StoreSettings
from pipeline.store.base import Store, open_store
from tests.ui.ui_fabric import FaultyFabric, write_fabric
from ui.api.app import create_app
from ui.api.server import Running, start_background
from ui.query.layer import Query, StatusOptions


@dataclass
class FabricStore:
    store: Store
    fabric: FaultyFabric


@pytest.fixture(scope="session")
def fabric_store(chdb_dir: Path) -> Iterator[FabricStore]:
    """A chDB store holding the faulty fabric (read-only for the tests that use it)."""
    store = open_store(StoreSettings(kind="chdb", chdb_path=str(chdb_dir),
                                     database=f"ui{uuid.uuid4().hex[:10]}"))
    fabric = write_fabric(store)
    yield FabricStore(store, fabric)
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")
    store.close()


def fabric_query(fs: FabricStore, **kw: Any) -> Query:
    # the data stops when the session starts: keep it "live" for the whole session
    return Query(fs.store, fs.fabric.topology, options=StatusOptions(silent_after_s=3600.0), **kw)


@pytest.fixture(scope="session")
def live_api(fabric_store: FabricStore) -> Iterator[Running]:
    """The API over the faulty fabric, served by uvicorn on a free loopback port."""
    running = start_background(create_app(fabric_query(fabric_store)))
    yield running
    running.stop()
