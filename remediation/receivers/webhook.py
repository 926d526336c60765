"""The ``webhook`` receiver: Alertmanager's webhook payload, version 4, exactly.

The body is what Alertmanager 0.34 POSTs to a ``webhook_config`` URL (``version``, ``groupKey``,
``truncatedAlerts``, ``status``, ``receiver``, ``groupLabels``, ``commonLabels``,
``commonAnnotations``, ``externalURL``, ``alerts[]`` with ``status``, ``labels``,
``annotations``, ``startsAt``, ``endsAt``, ``generatorURL``, ``fingerprint``), plus the two
later additions ``notification_reason`` and ``routeLabels``; so any tool written against
Alertmanager's webhook can take our notifications unchanged.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from pipeline.model import Alert
from remediation.alerting.labels import alert_annotations, rfc3339, status
from remediation.alerting.notification import Notification
from remediation.receivers.base import HttpOptions, HttpReceiver, where

#: how a notification's reason is spelled in ``notification_reason``
REASONS = {"new_alerts": "new_alerts", "resolved": "resolved", "repeat": "repeat_interval",
           "updated": "updated"}


class WebhookOptions(HttpOptions):
    max_alerts: int = Field(0, ge=0)
    external_url: str = ""
    generator_url: str = ""


def alert_json(alert: Alert, n: Notification, generator_url: str = "") -> dict[str, Any]:
    """One alert of the body; its times on the receiver's wall clock (``Notification.wall``)."""
    ends = None if n.is_firing(alert) else min(n.wall(alert.ends_ns or n.at_ns), n.wall_now_ns)
    return {
        "status": status(alert, n.at_ns),
        "labels": alert.identity,
        "annotations": alert_annotations(alert),
        "startsAt": rfc3339(min(n.wall(alert.starts_ns), n.wall_now_ns)),
        "endsAt": rfc3339(ends),
        "generatorURL": generator_url,
        "fingerprint": alert.fingerprint,
    }


def common(maps: list[dict[str, str]]) -> dict[str, str]:
    if not maps:
        return {}
    return {k: v for k, v in maps[0].items() if all(m.get(k) == v for m in maps[1:])}


def payload(n: Notification, max_alerts: int = 0, external_url: str = "",
            generator_url: str = "") -> dict[str, Any]:
    """The webhook v4 body for a notification."""
    alerts = list(n.alerts)
    shown = alerts[:max_alerts] if max_alerts else alerts
    return {
        "version": "4",
        "groupKey": n.group_key,
        "truncatedAlerts": len(alerts) - len(shown),
        "status": n.status,
        "receiver": n.receiver,
        "groupLabels": dict(n.group_labels),
        "commonLabels": common([a.identity for a in alerts]),
        "commonAnnotations": common([alert_annotations(a) for a in alerts]),
        "externalURL": external_url,
        "notification_reason": REASONS[n.reason],
        "routeLabels": dict(n.route_labels),
        "alerts": [alert_json(a, n, generator_url) for a in shown],
    }


class WebhookReceiver(HttpReceiver):
    name: ClassVar[str] = "webhook"
    Options: ClassVar[type[WebhookOptions]] = WebhookOptions
    options: WebhookOptions

    def send(self, notification: Notification) -> str:
        o = self.options
        body = payload(notification, o.max_alerts, o.external_url, o.generator_url)
        response = self._http.post(o.url, body)
        return f"{where(o.url)} {response.status_code}"


