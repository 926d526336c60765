"""The collector contract, and the options every built-in collector shares.

A collector is a plugin in the ``rocewatch.collectors`` entry-point group: a class with a
``name``, an ``Options`` model (pydantic, unknown keys forbidden), a constructor
``(instance, options, *, emit)``, ``run(stop)`` that blocks until the stop event is set, and
``health()``. It hands per-device :class:`~pipeline.model.SampleBatch` es to ``emit`` (the runner
publishes them, keyed by device), and the devices' LLDP neighbour reports to ``emit_neighbors``
when the runner set it, and must never raise out of ``run`` for anything a target does:
targets fail, collectors carry on and say so in their health samples.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from collectors.inventory import load_inventory
from pipeline.config import Duration
from pipeline.config_files import ConfigDir, ConfigFile
from pipeline.inventory import Inventory, Target, from_lab, parse_shard
from pipeline.model import SampleBatch
from pipeline.topology.neighbors import NeighborReport

Emit = Callable[[SampleBatch], None]
#: where LLDP neighbour reports go (the collect loop sets it on every collector it runs)
EmitNeighbors = Callable[[NeighborReport], None]


class CollectorOptions(BaseModel):
    """Where the targets come from, and the knobs every collector has."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the targets file (see :mod:`collectors.inventory`)
    targets: ConfigFile = ""
    #: a lab's ``agents.json``; its targets are added to the file's
    agents: ConfigFile = ""
    #: ``i/n``: collect only the i-th of n deterministic shards of the targets
    shard: str = ""
    #: directories searched for vendor profiles before the built-in ones
    profile_dirs: tuple[ConfigDir, ...] = ()
    #: a connected target that sends nothing for this many intervals is reported down
    stale_intervals: float = Field(3.0, gt=0)
    #: ``host:port`` of a Prometheus ``/metrics`` endpoint with per-target health ("" = none)
    metrics_listen: str = Field("", pattern=r"^(.+:\d{1,5})?$")
    #: how often each target's LLDP neighbours are read, in the device's seconds (0 = never)
    lldp_interval_s: Duration = Field(30.0, ge=0)

    @model_validator(mode="after")
    def _source(self) -> CollectorOptions:
        if not self.targets and not self.agents:
            raise ValueError("name a targets file (targets) or a lab agents file (agents)")
        if self.shard:
            parse_shard(self.shard)
        return self


def load_targets(options: CollectorOptions, protocol: str) -> tuple[tuple[Target, ...],
                                                                    dict[str, str]]:
    """The targets of one protocol this instance collects, and the environment their credential
    references resolve in (the process environment, plus the lab's credentials)."""
    env: dict[str, str] = dict(os.environ)
    targets: list[Target] = []
    if options.targets:
        targets.extend(load_inventory(options.targets, options.profile_dirs).targets)
    if options.agents:
        inventory, lab_env = from_lab(options.agents)
        targets.extend(inventory.targets)
        env = {**lab_env, **env}
    chosen = Inventory(targets=tuple(targets)).select(protocol, options.shard)
    return chosen, env


class Collector(ABC):
    """Base of the built-in collectors (a third party may implement the contract directly)."""

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]]

    def __init__(self, instance: str, options: BaseModel, *, emit: Emit) -> None:
        self.instance = instance
        self.options = options
        self.emit = emit
        #: where the collector's LLDP reports go (None: not read; the collect loop sets it)
        self.emit_neighbors: EmitNeighbors | None = None
        self.started = threading.Event()

    @abstractmethod
    def run(self, stop: threading.Event) -> None:
        """Collect until ``stop`` is set; returns after everything it started has stopped."""

    @abstractmethod
    def health(self) -> dict[str, Any]:
        """``{"collector": type, "targets": {name: snapshot}, ...}`` for health endpoints."""


def summarize(kind: str, instance: str, targets: Mapping[str, dict[str, Any]],
              **extra: Any) -> dict[str, Any]:
    up = sum(1 for t in targets.values() if t.get("up"))
    return {"collector": kind, "instance": instance, "targets_total": len(targets),
            "targets_up": up, "targets": dict(targets), **extra}
