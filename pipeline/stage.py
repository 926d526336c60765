"""What a stage's loop is handed when the front door starts it, typed down to its settings.

Each stage owns its loop (``collectors.loop``, ``pipeline.ingest.loop``, ``detectors.loop``,
``remediation.loop``, ``ui.api.server``); :mod:`rocewatch.app` loads the one settings model
(:mod:`rocewatch.settings`), builds one :class:`StageContext` around it and starts every loop of
the roles it runs as a supervised thread with a shared stop event.

The core cannot name the whole model (it composes the stages' sections, and the core imports no
stage), so the context is generic in its settings: :class:`CoreSettings` is what the core's
sections look like, and a stage that also reads a section of its own declares a protocol that
adds it (``detectors.loop.WithDetection``) and takes ``StageContext[WithDetection]``. The front
door's loaders are typed, so mypy proves the one model gives every loop what it reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pipeline.bus.base import Bus, Topics
from pipeline.config import (
    ApiSettings,
    BusSettings,
    CoordinationSettings,
    DashboardSettings,
    IngestSettings,
    StoreSettings,
)
from pipeline.exposition import Metrics
from pipeline.store.base import Store
from pipeline.topology.model import Topology


class CoreSettings(Protocol):
    """The core's sections of the configuration, as every loop may read them."""

    @property
    def site(self) -> str: ...

    @property
    def topology(self) -> str:
        """Path of the fabric's topology JSON (empty: not configured)."""

    @property
    def bus(self) -> BusSettings: ...

    @property
    def store(self) -> StoreSettings: ...

    @property
    def ingest(self) -> IngestSettings: ...

    @property
    def coordination(self) -> CoordinationSettings: ...

    @property
    def api(self) -> ApiSettings: ...

    @property
    def dashboard(self) -> DashboardSettings: ...


#: the settings a context carries: the whole model at the front door, what a loop reads in it
Settings_co = TypeVar("Settings_co", bound=CoreSettings, covariant=True)
LoopSettings = TypeVar("LoopSettings", bound=CoreSettings)


@dataclass
class StageContext(Generic[Settings_co]):
    """Shared handles: the settings (the core's sections and each stage's own), the bus, the topic
    names, the topology (None until one is known), and the store for the roles that own it
    (ingest and api with the embedded store)."""

    settings: Settings_co
    bus: Bus
    topics: Topics
    topology: Topology | None = None
    store: Store | None = None
    #: health and statistics each running loop publishes about itself, by loop name
    health: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    #: the process's metrics, where each loop declares what it measures (pipeline.exposition)
    metrics: Metrics = field(default_factory=Metrics)


StageLoop = Callable[[StageContext[LoopSettings], threading.Event], None]
"""A stage's loop over the settings it reads: ``StageLoop[Settings]`` at the front door."""
