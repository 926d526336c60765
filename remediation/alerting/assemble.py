"""The alerting side of remediation, assembled: receivers built from the registry, the routing
tree, inhibition, silences, the dispatcher on event time, and delivery with retries.

It is thread-safe: the router's loop feeds alerts and silence commands, the scheduler's heartbeat
flushes groups whose time has come, and the drain runbooks page through it (their own
``remediation_halted`` alert goes through routing like any other).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pipeline.config import PluginSpec
from pipeline.entities import entity_kind
from pipeline.errors import ConfigError
from pipeline.model import Alert
from pipeline.registry import Registry
from remediation.alerting.dispatch import Dispatcher
from remediation.alerting.inhibition import Inhibitor
from remediation.alerting.notification import Notification
from remediation.alerting.routing import build_routes
from remediation.alerting.silences import Silences
from remediation.audit import Recorder
from remediation.receivers.base import Receiver
from remediation.receivers.delivery import Deliverer
from remediation.settings import RemediationSettings

log = logging.getLogger("rocewatch.remediation")


def build_receivers(specs: Iterable[PluginSpec], site: str = "") -> dict[str, Receiver]:
    """Build every configured receiver; a wrong one is a ConfigError naming its key path."""
    registry: Registry[Receiver] = Registry("rocewatch.actions")
    out: dict[str, Receiver] = {}
    for i, spec in enumerate(specs):
        where = f"remediation.receivers[{i}]"
        if spec.instance in out:
            raise ConfigError(f"receiver name {spec.instance!r} is used twice", where)
        out[spec.instance] = registry.build(spec, where, site=site)
    return out


class Alerting:
    def __init__(self, settings: RemediationSettings, receivers: dict[str, Receiver],
                 recorder: Recorder, silences: Silences | None = None, workers: int = 4,
                 sleep: Any = None, maintained: Callable[[Alert], bool] | None = None,
                 wall_offset: Callable[[], int] = lambda: 0,
                 kind_of: Callable[[str], str] = entity_kind) -> None:
        #: the fabric clock's offset from the wall clock now, and an entity's kind (see
        #: :class:`~remediation.alerting.notification.Notification`)
        self.wall_offset = wall_offset
        self.kind_of = kind_of
        self.silences = silences if silences is not None else Silences()
        for s in settings.silences:
            self.silences.add(s.matchers, s.starts_at, s.ends_at, s.created_by, s.comment)
        route = build_routes(settings.route, list(receivers))
        self.dispatcher = Dispatcher(route, Inhibitor(settings.inhibit_rules), self.silences,
                                     {name: r.caps for name, r in receivers.items()},
                                     maintained, kind_of)
        self.deliverer = Deliverer(receivers, recorder, on_failed=self._failed, workers=workers,
                                   sleep=sleep)
        self._lock = threading.RLock()

    def ingest(self, alerts: Iterable[Alert], now_ns: int) -> None:
        with self._lock:
            self.dispatcher.ingest(alerts, now_ns)
            due = self.dispatcher.flush_due(now_ns)
        self._send(due)

    def due(self, now_ns: int) -> bool:
        """Whether a group's flush has come (cheap: the dispatcher keeps them in order)."""
        with self._lock:
            nxt = self.dispatcher.next_due_ns()
        return nxt is not None and nxt <= now_ns

    def advance(self, to_ns: int) -> None:
        """Event time is about to reach ``to_ns``: flush every group that comes due before, each
        at its own due time, as a remediation that kept up with every sample would have."""
        while True:
            with self._lock:
                nxt = self.dispatcher.next_due_ns()
                if nxt is None or nxt > to_ns:
                    return
                due = self.dispatcher.flush_due(nxt)
            self._send(due)

    def tick(self, now_ns: int) -> None:
        with self._lock:
            due = self.dispatcher.flush_due(now_ns)
        self._send(due)

    def _send(self, notifications: list[Notification]) -> None:
        if not notifications:
            return
        offset = self.wall_offset()
        for n in notifications:
            kinds = {a.entity: self.kind_of(a.entity) for a in n.alerts}
            self.deliverer.submit(replace(n, wall_offset_ns=offset, kinds=kinds))

    def _failed(self, notification: Notification) -> None:
        with self._lock:
            self.dispatcher.forget(notification.group_key, notification.receiver)

    def silence(self, matchers: Iterable[str], starts_ns: int, ends_ns: int,
                created_by: str, comment: str = "", sid: str = "") -> str:
        with self._lock:
            return self.silences.add(matchers, starts_ns, ends_ns, created_by, comment,
                                     id=sid).id

    def expire(self, sid: str, now_ns: int) -> bool:
        with self._lock:
            return self.silences.expire(sid, now_ns) is not None

    def firing(self, now_ns: int) -> dict[str, Alert]:
        with self._lock:
            return self.dispatcher.firing(now_ns)

    def gc(self, now_ns: int) -> None:
        with self._lock:
            self.silences.gc(now_ns)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            d = self.dispatcher
            return {"alerts_held": len(d.alerts), "groups": len(d.groups),
                    "alerts_received": d.stats.received, "stale": d.stats.stale,
                    "notifications": d.stats.notifications,
                    "muted": {"silenced": d.stats.muted_silenced,
                              "inhibited": d.stats.muted_inhibited,
                              "maintenance": d.stats.muted_maintenance},
                    "silences": len(self.silences.all())}

    def open_incidents(self) -> int:
        """Root-cause alerts firing now (for metrics)."""
        with self._lock:
            return sum(1 for a in self.dispatcher.alerts.values() if a.root_cause and a.firing)

    def close(self) -> None:
        self.deliverer.close()
