"""Targets shared dynamically by the collect processes of a deployment.

With ``coordination`` configured, every collector instance without a ``shard`` of its own joins
the ZooKeeper group ``collect-<instance>`` (:class:`pipeline.cluster.group.Group`); the i-th of
the n live members (by joining order) collects shard ``i/n`` of the targets (the same stable hash
of the name as a static ``shard: i/n``). When a process joins or dies (its node goes once its
session expires), every member sees the new view at once and rebuilds its instance for its new
shard: the old instance stops, a new one connects to the targets it now owns. A target changes
hands only with the view, and for the moment between the old owner's stop and the new owner's
first sample it may be polled by both (the store keeps one copy of a sample polled twice: they
carry the device's time); the tests measure both.

While ZooKeeper is away the members keep their last shard (:mod:`pipeline.cluster.group`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pydantic import BaseModel

from collectors.base import Collector, Emit, EmitNeighbors
from pipeline.cluster.group import Group, View
from pipeline.cluster.lease import identity
from pipeline.config import CoordinationSettings, PluginSpec
from pipeline.registry import Registry

__all__ = ["Assigned", "assigned"]

log = logging.getLogger("rocewatch.collectors")


def assigned(spec: PluginSpec, coordination: CoordinationSettings | None) -> bool:
    """Whether an instance's targets are shared through the group (coordination is configured
    and the spec names no static shard)."""
    return bool(coordination is not None and coordination.zookeeper
                and not spec.options.get("shard"))


class Assigned(Collector):
    """One collector instance whose shard of the targets follows its group's view."""

    name = "assigned"
    Options = BaseModel

    def __init__(self, spec: PluginSpec, where: str, registry: Registry[Collector],
                 coordination: CoordinationSettings, site: str, *, emit: Emit,
                 emit_neighbors: EmitNeighbors | None = None) -> None:
        self.spec = spec
        self.where = where
        self.registry = registry
        self.coordination = coordination
        self.site = site
        self.shard = ""
        self.reassignments = 0
        self._neighbors = emit_neighbors
        # built now: a spec that cannot be built fails at start, as a static one does
        self.inner: Collector = self._build("0/1", emit)
        super().__init__(spec.instance, self.inner.options, emit=emit)
        self.emit_neighbors = emit_neighbors
        self._inner_stop = threading.Event()
        self._inner_thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._wake = threading.Event()
        self._group: Group | None = None

    def _build(self, shard: str, emit: Emit) -> Collector:
        spec = PluginSpec.model_validate({**self.spec.model_dump(), "shard": shard})
        inner = self.registry.build(spec, self.where, emit=emit)
        inner.emit_neighbors = self._neighbors
        return inner

    def _changed(self, _view: View) -> None:
        self._wake.set()

    def _run_inner(self, inner: Collector, stop: threading.Event) -> None:
        try:
            inner.run(stop)
        except BaseException as exc:  # handed to run(), which raises it to the supervisor
            self._failure = exc
            self._wake.set()

    def _stop_inner(self) -> None:
        self._inner_stop.set()
        if self._inner_thread is not None:
            self._inner_thread.join(30)
            self._inner_thread = None

    def _switch(self, shard: str) -> None:
        self._stop_inner()
        if self.shard:  # the first assignment reuses the instance built at start
            self.inner = self._build(shard, self.emit)
            self.reassignments += 1
        elif shard != "0/1":
            self.inner = self._build(shard, self.emit)
        log.info("collector %s: shard %s of its targets (was %s)", self.instance, shard,
                 self.shard or "none")
        self.shard = shard
        self._inner_stop = threading.Event()
        self._inner_thread = threading.Thread(
            target=self._run_inner, args=(self.inner, self._inner_stop), daemon=True,
            name=f"collector-{self.instance}-{shard.replace('/', 'of')}")
        self._inner_thread.start()
        self.started.set()

    def run(self, stop: threading.Event) -> None:
        self._group = Group(self.coordination, self.site, f"collect-{self.instance}",
                            identity(), self._changed).start()
        try:
            while not stop.is_set():
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure
                shard = self._group.view.shard
                if shard and shard != self.shard:
                    self._switch(shard)
                self._wake.wait(0.5)
                self._wake.clear()
        finally:
            self._stop_inner()
            self._group.stop()

    def health(self) -> dict[str, Any]:
        view = self._group.view if self._group is not None else View()
        return {**self.inner.health(),
                "assignment": {"shard": self.shard, "members": len(view.members),
                               "reassignments": self.reassignments}}
