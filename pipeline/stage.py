"""What a stage's loop is handed when the front door starts it.

Each stage owns its loop (``collectors``, ``pipeline.ingest.loop``, ``detectors.loop``,
``remediation.loop``, ``ui.api.server``); :mod:`rocewatch.app` builds one :class:`StageContext` and
starts every loop of the roles it runs as a supervised thread with a shared stop event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.bus.base import Bus, Topics
from pipeline.store.base import Store
from pipeline.topology.model import Topology


@dataclass
class StageContext:
    """Shared handles: the whole settings object (each stage reads its own section), the bus,
    the topic names, the topology (None until one is known), and the store for the roles that
    own it (ingest and api with the embedded store)."""

    settings: Any
    bus: Bus
    topics: Topics
    topology: Topology | None = None
    store: Store | None = None
    #: health and statistics each running loop publishes about itself, by loop name
    health: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)


StageLoop = Callable[[StageContext, threading.Event], None]
