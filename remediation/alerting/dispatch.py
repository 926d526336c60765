"""The alert lifecycle on event time: Alertmanager's dispatcher and notification log.

Alerts arrive as state changes; each is routed to aggregation groups (route × group labels). A
group flushes ``group_wait`` after its first alert (at once, before its first flush, if an alert is
older than that), then every ``group_interval``. At a flush, muted alerts (silenced, in
maintenance, inhibited) are left out, and each of the route's receivers is notified only when its
notification log says so (Alertmanager's ``needsUpdate``): a firing alert it has not been told
about, a newly resolved one (when it takes resolved notices), everything resolved, or
``repeat_interval`` elapsed. An alert
that fires and resolves inside ``group_wait`` sends nothing. Resolved alerts leave their groups
after the flush that reported them; empty groups are dropped.

Everything here is pure: the caller passes event time in. A receiver may ask for re-sends sooner
than the route's repeat (Alertmanager's API wants firing alerts re-posted before ``endsAt``):
its ``max_repeat_s`` caps both the repeat and the group's flush interval.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.model import Alert
from remediation.alerting.inhibition import Inhibition, Inhibitor
from remediation.alerting.labels import match_labels
from remediation.alerting.notification import Notification, Reason
from remediation.alerting.routing import Route
from remediation.alerting.silences import Silences

NS = 1_000_000_000


@dataclass(frozen=True)
class ReceiverCaps:
    """What the lifecycle needs to know about a receiver."""

    send_resolved: bool = True
    max_repeat_s: float | None = None


@dataclass
class _LogEntry:
    firing: frozenset[str]
    resolved: frozenset[str]
    at_ns: int


@dataclass
class _Group:
    route: Route
    key: str
    labels: dict[str, str]
    interval_ns: int
    repeat_ns: dict[str, int]
    next_flush_ns: int
    alerts: dict[str, Alert] = field(default_factory=dict)
    log: dict[str, _LogEntry] = field(default_factory=dict)
    #: it flushed once: from then on it keeps its group_interval (Alertmanager's hasFlushed)
    flushed: bool = False


@dataclass
class DispatchStats:
    received: int = 0
    stale: int = 0
    notifications: int = 0
    muted_silenced: int = 0
    muted_inhibited: int = 0
    muted_maintenance: int = 0


class Dispatcher:
    def __init__(self, root: Route, inhibitor: Inhibitor, silences: Silences,
                 receivers: Mapping[str, ReceiverCaps],
                 maintained: Callable[[Alert], bool] | None = None,
                 kind_of: Callable[[str], str] | None = None) -> None:
        self.root = root
        self.inhibitor = inhibitor
        self.silences = silences
        #: whether a maintenance mutes an alert (what a drain caused pages nobody)
        self.maintained = maintained
        #: an entity's kind from the topology (None: from the shared naming)
        self.kind_of = kind_of
        self.receivers = dict(receivers)
        self.alerts: dict[str, Alert] = {}
        self.groups: dict[str, _Group] = {}
        #: fingerprint → keys of the groups holding it
        self._member: dict[str, set[str]] = {}
        #: (next flush, group key), a min-heap; entries a later change made stale are skipped
        self._due: list[tuple[int, str]] = []
        self.stats = DispatchStats()

    # -- input ---------------------------------------------------------------------------------

    def ingest(self, alerts: Iterable[Alert], now_ns: int) -> None:
        for alert in alerts:
            self._ingest(alert, now_ns)

    def _ingest(self, alert: Alert, now_ns: int) -> None:
        self.stats.received += 1
        fp = alert.fingerprint
        previous = self.alerts.get(fp)
        if previous is not None and alert.updated_ns < previous.updated_ns:
            self.stats.stale += 1  # an older state delivered late: the newer one stands
            return
        if previous is None and not self._firing(alert, now_ns):
            return  # resolved before we ever saw it fire: nobody was told, nobody needs to be
        self.alerts[fp] = alert
        member = self._member.get(fp)
        if member and previous is not None and previous.severity == alert.severity and \
                previous.root_cause == alert.root_cause:
            # a re-publication with the same routing labels: the same groups, nothing to route
            for gkey in member:
                self.groups[gkey].alerts[fp] = alert
            return
        labels = self._labels(alert)
        member = self._member.setdefault(fp, set())
        for route in self.root.match(labels):
            gkey = route.group_key(labels)
            group = self.groups.get(gkey)
            if group is None:
                group = self._new_group(route, gkey, labels, now_ns)
                self.groups[gkey] = group
                heapq.heappush(self._due, (group.next_flush_ns, gkey))
            member.add(gkey)
            if not group.flushed and \
                    alert.starts_ns + int(route.group_wait_s * NS) <= now_ns < group.next_flush_ns:
                group.next_flush_ns = now_ns
                heapq.heappush(self._due, (now_ns, gkey))
        for gkey in member:  # an alert stays in groups its severity took it out of
            self.groups[gkey].alerts[fp] = alert

    def _labels(self, alert: Alert) -> dict[str, str]:
        return match_labels(alert, self.kind_of(alert.entity) if self.kind_of else None)

    def _new_group(self, route: Route, gkey: str, labels: Mapping[str, str],
                   now_ns: int) -> _Group:
        caps = [self.receivers.get(r, ReceiverCaps()) for r in route.receivers]
        caps_repeat = [c.max_repeat_s for c in caps if c.max_repeat_s]
        interval = min([route.group_interval_s, *caps_repeat])
        repeat = {r: min(route.repeat_interval_s, c.max_repeat_s or route.repeat_interval_s)
                  for r, c in zip(route.receivers, caps, strict=True)}
        return _Group(route, gkey, route.group_labels(labels), int(interval * NS),
                      {r: int(s * NS) for r, s in repeat.items()},
                      now_ns + int(route.group_wait_s * NS))

    # -- time ----------------------------------------------------------------------------------

    def _current(self, entry: tuple[int, str]) -> bool:
        group = self.groups.get(entry[1])
        return group is not None and group.next_flush_ns == entry[0]

    def next_due_ns(self) -> int | None:
        """When the next group flushes (None: no group)."""
        while self._due and not self._current(self._due[0]):
            heapq.heappop(self._due)
        return self._due[0][0] if self._due else None

    def flush_due(self, now_ns: int) -> list[Notification]:
        """Flush every group whose time has come; the notifications to deliver."""
        out: list[Notification] = []
        due: dict[str, None] = {}
        while self._due and self._due[0][0] <= now_ns:
            entry = heapq.heappop(self._due)
            if self._current(entry):
                due[entry[1]] = None
        if not due:
            return out
        inhibition = self.inhibitor.snapshot(self.firing(now_ns))
        for gkey in due:
            out.extend(self._flush(self.groups[gkey], now_ns, inhibition))
        return out

    def _flush(self, group: _Group, now_ns: int, inhibition: Inhibition) -> list[Notification]:
        firing: dict[str, Alert] = {}
        resolved: dict[str, Alert] = {}
        for fp, alert in group.alerts.items():
            if self._muted(fp, alert, inhibition, now_ns):
                continue
            (firing if self._firing(alert, now_ns) else resolved)[fp] = alert
        out: list[Notification] = []
        for receiver in group.route.receivers:
            caps = self.receivers.get(receiver, ReceiverCaps())
            entry = group.log.get(receiver)
            reason = self._needs_update(entry, set(firing), set(resolved), caps,
                                        group.repeat_ns[receiver], now_ns)
            if reason is None:
                continue
            group.log[receiver] = _LogEntry(frozenset(firing), frozenset(resolved), now_ns)
            chosen = {**firing, **(resolved if caps.send_resolved else {})}
            if not chosen:
                continue  # everything resolved, but this receiver does not take resolved notices
            out.append(Notification(receiver, group.key, dict(group.labels),
                                    tuple(chosen[fp] for fp in sorted(chosen)), now_ns,
                                    reason, {"route": group.route.key}))
        self.stats.notifications += len(out)
        for fp in [fp for fp, a in group.alerts.items() if not self._firing(a, now_ns)]:
            del group.alerts[fp]
            member = self._member.get(fp, set())
            member.discard(group.key)
            if not member:
                self._member.pop(fp, None)
                self.alerts.pop(fp, None)
        group.flushed = True
        if group.alerts:
            group.next_flush_ns = now_ns + group.interval_ns
            heapq.heappush(self._due, (group.next_flush_ns, group.key))
        else:
            del self.groups[group.key]
        return out

    @staticmethod
    def _needs_update(entry: _LogEntry | None, firing: set[str], resolved: set[str],
                      caps: ReceiverCaps, repeat_ns: int, now_ns: int) -> Reason | None:
        if entry is None:
            return "new_alerts" if firing else None
        if not firing <= entry.firing:
            return "new_alerts"
        if not firing:
            return "resolved" if entry.firing else None
        if caps.send_resolved and not resolved <= entry.resolved:
            return "resolved"
        if entry.at_ns + repeat_ns <= now_ns:
            return "repeat"
        return None

    def forget(self, group_key: str, receiver: str) -> None:
        """A delivery failed for good: the next flush tells the receiver again."""
        group = self.groups.get(group_key)
        if group is not None:
            group.log.pop(receiver, None)

    # -- views ---------------------------------------------------------------------------------

    @staticmethod
    def _firing(alert: Alert, now_ns: int) -> bool:
        return alert.ends_ns is None or alert.ends_ns > now_ns

    def firing(self, now_ns: int) -> dict[str, Alert]:
        return {fp: a for fp, a in self.alerts.items() if self._firing(a, now_ns)}

    def _muted(self, fp: str, alert: Alert, inhibition: Inhibition, now_ns: int) -> bool:
        if self.silences and self.silences.mutes(self._labels(alert), now_ns):
            self.stats.muted_silenced += 1
            return True
        if self.maintained is not None and self.maintained(alert):
            self.stats.muted_maintenance += 1
            return True
        if self._firing(alert, now_ns) and inhibition.inhibited_by(alert, fp):
            self.stats.muted_inhibited += 1
            return True
        return False
