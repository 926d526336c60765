"""What the lifecycle hands a receiver: one notification for one aggregation group.

A notification carries the group's alerts as they stood at the flush (firing ones, and resolved
ones the receiver has not been told about), the group's key and labels, why it was sent, and the
event time of the flush. Receivers turn it into their own wire format.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, overload

from pipeline.entities import entity_kind
from pipeline.model import Alert
from remediation.alerting.labels import match_labels

Reason = Literal["new_alerts", "resolved", "repeat", "updated"]


@dataclass(frozen=True)
class Notification:
    receiver: str
    group_key: str
    group_labels: dict[str, str]
    alerts: tuple[Alert, ...]
    at_ns: int
    reason: Reason
    route_labels: dict[str, str] = field(default_factory=dict)
    #: the fabric clock's offset from the receiver's wall clock when it was handed over:
    #: ``wall = event + offset`` (:meth:`wall`; receivers send times on their peer's clock)
    wall_offset_ns: int = 0
    #: each alert's entity → its kind (:mod:`pipeline.entities`), for labels routes can match
    kinds: Mapping[str, str] = field(default_factory=dict)

    @overload
    def wall(self, event_ns: int) -> int: ...

    @overload
    def wall(self, event_ns: None) -> None: ...

    def wall(self, event_ns: int | None) -> int | None:
        """An event time on the receiver's wall clock (None stays None: not set)."""
        return None if event_ns is None else event_ns + self.wall_offset_ns

    @property
    def wall_now_ns(self) -> int:
        """The moment of the flush on the receiver's wall clock."""
        return self.at_ns + self.wall_offset_ns

    def kind(self, alert: Alert) -> str:
        return self.kinds.get(alert.entity) or entity_kind(alert.entity)

    def is_firing(self, alert: Alert) -> bool:
        """Whether ``alert`` fires as of this notification's event time."""
        return alert.ends_ns is None or alert.ends_ns > self.at_ns

    @property
    def firing(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts if self.is_firing(a))

    @property
    def resolved(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts
                     if a.ends_ns is not None and a.ends_ns <= self.at_ns)

    @property
    def status(self) -> Literal["firing", "resolved"]:
        return "firing" if self.firing else "resolved"

    @property
    def fingerprints(self) -> tuple[str, ...]:
        return tuple(sorted(a.fingerprint for a in self.alerts))

    @property
    def group_id(self) -> str:
        """A stable short id for the group at this receiver (PagerDuty dedup_key, mail thread)."""
        digest = hashlib.sha256(f"{self.receiver}\0{self.group_key}".encode()).hexdigest()
        return f"rocewatch-{digest[:32]}"

    def common_labels(self) -> dict[str, str]:
        """Labels every alert of the notification shares with the same value."""
        sets = [match_labels(a, self.kinds.get(a.entity)) for a in self.alerts]
        if not sets:
            return {}
        first = sets[0]
        return {k: v for k, v in first.items() if all(s.get(k) == v for s in sets[1:])}

    def title(self) -> str:
        """``[FIRING:2] faulty_link leaf2~spine1`` (Alertmanager's default subject shape)."""
        labels = " ".join(self.group_labels[k] for k in sorted(self.group_labels))
        count = len(self.firing) if self.firing else len(self.resolved)
        return f"[{self.status.upper()}:{count}] {labels}".rstrip()
