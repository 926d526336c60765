"""A group of processes in ZooKeeper: who is in it, in the order they joined.

Every member holds an ephemeral, sequential znode under the group's path
(``<root>/<site>/<group>/m-<sequence>``, its identity as data); the member whose node has the lowest
sequence is the leader, and the i-th of n members (by sequence) owns shard ``i/n`` of whatever the
group shares. A member that dies (kill -9, a lost host) loses its node when its ZooKeeper session
expires (``coordination.session_timeout_s``); every member watches the group's children and
sees the new :class:`View` as soon as ZooKeeper deletes it.

Availability over exclusivity: while ZooKeeper is unreachable a member keeps its last view (it
goes on doing its share; a job may then run twice, never not at all), and a member whose session
expired joins again, with a new node, once it is reconnected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.config import CoordinationSettings
from pipeline.errors import ConfigError, CoordinationError

__all__ = ["Group", "View", "group_path"]

log = logging.getLogger("rocewatch.cluster")
PREFIX = "m-"


@dataclass(frozen=True)
class View:
    """The group as one member sees it: the members' node names in joining order, and this
    member's place among them (None while it is not in the group)."""

    members: tuple[str, ...] = ()
    me: int | None = None

    @property
    def leader(self) -> bool:
        return self.me == 0

    @property
    def shard(self) -> str:
        """This member's shard ``i/n`` of the group's work ("" while it is not a member)."""
        return "" if self.me is None else f"{self.me}/{len(self.members)}"


def group_path(settings: CoordinationSettings, site: str, group: str) -> str:
    for part in (site, group):
        if not part or "/" in part:
            raise ConfigError(f"a coordination group needs a plain name, not {part!r}")
    return f"{settings.root}/{site}/{group}"


class Group:
    """This process's membership of one group; ``on_change(view)`` is called (from ZooKeeper's
    event thread: keep it short) whenever the view changes."""

    def __init__(self, settings: CoordinationSettings, site: str, group: str, identity: str,
                 on_change: Callable[[View], None] | None = None) -> None:
        if not settings.zookeeper:
            raise ConfigError("coordination.zookeeper is not set")
        from kazoo.client import KazooClient

        self.path = group_path(settings, site, group)
        self.identity = identity
        self.on_change = on_change
        self.view = View()
        #: views seen, and how often this member joined (a new session after an expiry)
        self.changes = 0
        self.joins = 0
        self._node = ""
        self._lock = threading.Lock()
        self._expired = False
        self._leaving = False
        self._client: Any = KazooClient(
            hosts=settings.zookeeper, timeout=settings.session_timeout_s,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0},
            command_retry={"max_tries": 5, "delay": 0.1, "max_delay": 1.0})
        self._client.add_listener(self._state)

    def start(self, timeout_s: float = 15.0) -> Group:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            self._client.start(timeout=timeout_s)
            self._client.ensure_path(self.path)
            self._join()
            self._client.ChildrenWatch(self.path, self._children)
        except (KazooException, KazooTimeoutError) as exc:
            self._client.stop()
            raise CoordinationError(f"cannot join {self.path} on ZooKeeper: {exc}") from exc
        return self

    def _join(self) -> None:
        node: str = self._client.create(f"{self.path}/{PREFIX}", self.identity.encode(),
                                        ephemeral=True, sequence=True)
        with self._lock:
            self._node = node.rsplit("/", 1)[1]
            self.joins += 1
        log.info("joined %s as %s (%s)", self.path, self._node, self.identity)

    def _state(self, state: str) -> None:
        from kazoo.client import KazooState

        if self._leaving:
            return
        if state == KazooState.LOST:
            self._expired = True
            log.warning("ZooKeeper session of %s expired: keeping the last view until it "
                        "joins again", self.path)
        elif state == KazooState.CONNECTED and self._expired:
            self._expired = False
            self._client.handler.spawn(self._rejoin)

    def _rejoin(self) -> None:
        from kazoo.exceptions import KazooException

        try:
            self._join()
            self._children(self._client.get_children(self.path))
        except KazooException as exc:
            log.error("cannot join %s again: %s", self.path, exc)

    def _children(self, children: list[str]) -> None:
        members = tuple(sorted((c for c in children if c.startswith(PREFIX)),
                               key=lambda c: c[len(PREFIX):]))
        with self._lock:
            me = members.index(self._node) if self._node in members else None
            view = View(members, me)
            # not in it (yet, or any more, until it joins again): keep the last view
            if me is None or view == self.view:
                return
            self.view = view
            self.changes += 1
        log.info("%s: %d member(s), this one %s", self.path, len(members), view.shard)
        if self.on_change is not None:
            self.on_change(view)

    def identities(self) -> dict[str, str]:
        """Every member's identity, by node name (a read of ZooKeeper)."""
        out: dict[str, str] = {}
        for child in self._client.get_children(self.path):
            data, _ = self._client.get(f"{self.path}/{child}")
            out[child] = data.decode()
        return out

    def stop(self) -> None:
        """Leave the group (the node goes at once, not after the session timeout)."""
        self._leaving = True
        try:
            self._client.stop()
            self._client.close()
        except Exception as exc:  # leaving must not fail a shutdown; the session expires anyway
            log.warning("leaving %s: %s", self.path, exc)
