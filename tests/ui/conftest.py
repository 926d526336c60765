"""Fixtures of the read side: a session's stores (the faulty two-tier fabric, the three-tier storm)
and a live API over each on loopback.

The stores live in the session's one chDB directory (``chdb_dir``), each in a database of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.config import StoreSettings
from pipeline.store.base import Store, open_store
from pipeline.topology.model import Topology
from tests.ui.three_tier import StormFabric, write_storm_fabric
from tests.ui.ui_fabric import FaultyFabric, write_fabric
from ui.api.app import create_app
from ui.api.server import Running, start_background
from ui.query.layer import Query, StatusOptions


@dataclass
class FabricStore:
    store: Store
    fabric: FaultyFabric


@dataclass
class StormStore:
    store: Store
    fabric: StormFabric


@contextmanager
def own_database(chdb_dir: Path, prefix: str) -> Iterator[Store]:
    """A chDB store in a fresh database of the session's directory, dropped afterwards."""
    store = open_store(StoreSettings(kind="chdb", chdb_path=str(chdb_dir),
                                     database=f"{prefix}{uuid.uuid4().hex[:10]}"))
    try:
        yield store
    finally:
        store.execute(f"DROP DATABASE IF EXISTS {store.database}")
        store.close()


@pytest.fixture(scope="session")
def fabric_store(chdb_dir: Path) -> Iterator[FabricStore]:
    """A chDB store holding the faulty fabric (read-only for the tests that use it)."""
    with own_database(chdb_dir, "ui") as store:
        yield FabricStore(store, write_fabric(store))


@pytest.fixture(scope="session")
def storm_store(chdb_dir: Path) -> Iterator[StormStore]:
    """A chDB store holding the three-tier storm (:mod:`tests.ui.three_tier`), read-only."""
    with own_database(chdb_dir, "storm") as store:
        yield StormStore(store, write_storm_fabric(store))


def live_query(store: Store, topology: Topology, **kw: Any) -> Query:
    # the data stops when the session starts: keep it "live" for the whole session
    return Query(store, topology, options=StatusOptions(silent_after_s=3600.0), **kw)


def fabric_query(fs: FabricStore, **kw: Any) -> Query:
    return live_query(fs.store, fs.fabric.topology, **kw)


@pytest.fixture(scope="session")
def live_api(fabric_store: FabricStore) -> Iterator[Running]:
    """The API over the faulty fabric, served by uvicorn on a free loopback port."""
    running = start_background(create_app(fabric_query(fabric_store)))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def storm_api(storm_store: StormStore) -> Iterator[Running]:
    """The API over the three-tier storm, served by uvicorn on a free loopback port."""
    running = start_background(create_app(live_query(storm_store.store,
                                                     storm_store.fabric.topology)))
    yield running
    running.stop()
