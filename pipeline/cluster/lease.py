"""The leader's lease: work that must run once across the processes of a role.

A :class:`Lease` is this process's membership of a :class:`~pipeline.cluster.group.Group`; while
it is the group's leader (the oldest member) it runs the work (``start()``), and it stops it
(``stop()``) when it no longer is. A killed leader's node goes when its session expires, and the
next oldest member starts the work then. The transitions run on the lease's own thread, in order,
so a slow ``stop`` (a job finishing its run) never holds ZooKeeper's event thread.

A process that starts while ZooKeeper does not answer joins once it does (not leading
meanwhile). Without coordination (``coordination.zookeeper`` empty) there is no lease: the
caller starts the work itself, as one process does.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

from pipeline.cluster.group import Group, View
from pipeline.config import CoordinationSettings
from pipeline.errors import CoordinationError
from pipeline.exposition import Metrics
from pipeline.retry import Backoff, RetryPolicy

__all__ = ["Lease", "identity"]

log = logging.getLogger("rocewatch.cluster")
#: joining the group while ZooKeeper does not answer
JOIN_RETRY = RetryPolicy(initial_s=0.5, cap_s=10.0)


def identity() -> str:
    """This process, as the groups it joins name it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Lease:
    """Runs ``start`` while this process leads the ``name`` group of ``site``, ``stop`` when it
    stops leading (and at :meth:`close`)."""

    def __init__(self, settings: CoordinationSettings, site: str, name: str,
                 start: Callable[[], None], stop: Callable[[], None],
                 metrics: Metrics | None = None) -> None:
        self.name = name
        self._start, self._stop = start, stop
        self._wake = threading.Event()
        self._closing = threading.Event()
        self.leading = False
        #: how often this process took the lease
        self.acquired = 0
        gauge = (metrics or Metrics()).gauge(
            "rocewatch_lease_leader", "1 while this process holds the lease", ["lease"])
        self._gauge = gauge.labels(lease=name)
        self.group = Group(settings, site, f"lease-{name}", identity(), self._changed)
        self._thread = threading.Thread(target=self._follow, name=f"lease-{name}",
                                        daemon=True)

    def begin(self) -> Lease:
        """Join the group (from the lease's thread, again and again while ZooKeeper does not
        answer: a process that starts while it is away joins once it is back) and follow it."""
        self._thread.start()
        return self

    def _changed(self, _view: View) -> None:
        self._wake.set()

    def _join(self) -> bool:
        backoff = Backoff(JOIN_RETRY)
        while not self._closing.is_set():
            try:
                self.group.start()
                return True
            except CoordinationError as exc:
                delay = backoff.fail() or JOIN_RETRY.cap_s
                log.error("lease %s: %s (again in %.1fs)", self.name, exc, delay)
                self._closing.wait(delay)
        return False

    def _follow(self) -> None:
        joined = self._join()
        while joined:
            self._wake.wait()
            self._wake.clear()
            lead = self.group.view.leader and not self._closing.is_set()
            try:
                if lead and not self.leading:
                    self.leading = True
                    self.acquired += 1
                    self._gauge.set(1)
                    log.info("lease %s taken: this process runs it", self.name)
                    self._start()
                elif not lead and self.leading:
                    self.leading = False
                    self._gauge.set(0)
                    log.info("lease %s given up", self.name)
                    self._stop()
            except Exception:  # the work's own failure; the lease goes on following the group
                log.exception("lease %s: starting or stopping its work failed", self.name)
            if self._closing.is_set():
                return

    def health(self) -> dict[str, object]:
        view = self.group.view
        return {"lease": self.name, "leading": self.leading, "acquired": self.acquired,
                "members": len(view.members), "joins": self.group.joins}

    def close(self) -> None:
        """Stop the work if it runs here, then leave the group."""
        self._closing.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(30)
        if self.leading:  # the thread did not get to it
            self.leading = False
            self._stop()
        self.group.stop()
