"""The watchdog: a loop that keeps crashing is reported, never silent.

Every role's loop runs under a :class:`~pipeline.supervisor.Supervisor`, which counts the crashes
in a row that came without progress and calls the loop *crash-looping* past a few (a record no
fix can read, a file that went bad, a peer that refuses every session). The watchdog looks at each
supervisor of the process every second. When one becomes crash-looping it publishes a firing
:data:`CRASH_LOOP_ALERT` to the alerts topic (critical; the entity is the loop, ``host`` and
``site`` are labels, the last error and the count are annotations), where remediation routes it to
on-call like any other alert and ingest stores it; once the loop makes progress again, or the
process stops, it publishes the resolution. The same state is in the loop's health
(``crash_looping``; ``/healthz`` is degraded meanwhile) and in the process's metrics
(``rocewatch_loop_crash_looping``). A publish the bus refuses is tried again at the next look.

A crash is the process's own matter, so these alerts carry the process's wall-clock time, not the
fabric's event time.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping

from pipeline.bus.base import Producer, Topics
from pipeline.errors import BusError
from pipeline.model import Alert, Severity
from pipeline.supervisor import Supervisor
from pipeline.wire.alerts import encode_alerts

log = logging.getLogger("rocewatch.watchdog")

#: the alert a crash-looping loop raises
CRASH_LOOP_ALERT = "loop_crash_looping"
#: how often (wall seconds) the watchdog looks at the loops
EVERY_S = 1.0


class Watchdog:
    """Turns the supervisors' crash-looping state into alerts on the alerts topic."""

    def __init__(self, supervisors: Mapping[str, Supervisor], producer: Producer,
                 topics: Topics, site: str, host: str | None = None,
                 wall: Callable[[], int] = time.time_ns) -> None:
        self.supervisors = supervisors
        self.producer = producer
        self.topics = topics
        self.site = site
        self.host = host or socket.gethostname()
        self._wall = wall
        #: loop → the firing alert published for it
        self.firing: dict[str, Alert] = {}
        self.published = 0
        self.publish_failures = 0

    def _alert(self, loop: str, sup: Supervisor, now_ns: int) -> Alert:
        return Alert(
            name=CRASH_LOOP_ALERT, entity=loop, severity=Severity.CRITICAL,
            labels={"host": self.host, "site": self.site},
            annotations={
                "summary": f"the {loop} loop on {self.host} keeps crashing without progress",
                "last_error": sup.last_error[:500],
                "crashes_without_progress": str(sup.stalled), "restarts": str(sup.restarts)},
            evidence={"crashes_without_progress": float(sup.stalled),
                      "restarts": float(sup.restarts)},
            starts_ns=now_ns, updated_ns=now_ns, source="watchdog")

    def check(self) -> list[Alert]:
        """Look at every loop once; publish (and return) the alerts whose state changed."""
        now = self._wall()
        changes: dict[str, Alert] = {}
        for loop, sup in list(self.supervisors.items()):
            looping = sup.check()
            firing = self.firing.get(loop)
            if looping and firing is None:
                changes[loop] = self._alert(loop, sup, now)
            elif not looping and firing is not None:
                changes[loop] = firing.model_copy(update={"updated_ns": now, "ends_ns": now})
        if changes and self._publish(list(changes.values())):
            for loop, alert in changes.items():
                if alert.firing:
                    self.firing[loop] = alert
                    log.error("%s is crash-looping (%s): alert %s raised", loop,
                              self.supervisors[loop].last_error, CRASH_LOOP_ALERT)
                else:
                    del self.firing[loop]
            return list(changes.values())
        return []

    def _publish(self, alerts: list[Alert]) -> bool:
        try:
            self.producer.send(self.topics.alerts, encode_alerts(alerts), key=b"watchdog")
            self.producer.flush()
        except BusError as exc:
            self.publish_failures += 1
            log.warning("cannot publish %d crash-loop alert change(s) (will retry): %s",
                        len(alerts), exc)
            return False
        self.published += len(alerts)
        return True

    def run(self, stop: threading.Event, every_s: float = EVERY_S) -> None:
        """Look every ``every_s`` until ``stop``."""
        while not stop.wait(every_s):
            try:
                self.check()
            except Exception:  # the watchdog must outlive what it watches
                log.exception("the watchdog failed a look (it goes on)")

    def close(self) -> None:
        """Resolve what is still firing (this process no longer runs those loops) and close."""
        now = self._wall()
        resolved = [a.model_copy(update={"updated_ns": now, "ends_ns": now})
                    for a in self.firing.values()]
        if resolved and self._publish(resolved):
            self.firing.clear()
        try:
            self.producer.close()
        except BusError as exc:
            log.warning("closing the watchdog's producer: %s", exc)
