"""The ``pagerduty`` receiver: PagerDuty Events API v2 (``POST /v2/enqueue``).

One PagerDuty incident per aggregation group: ``trigger`` while any of its alerts fires (a repeat
re-triggers the same incident), ``resolve`` when all have resolved. The ``dedup_key`` is derived
from the receiver and the group key, so it is the same across restarts and replicas, and a
re-send never opens a second incident. The ``routing_key`` is a secret: set it with
``ROCEWATCH_REMEDIATION__RECEIVERS__<i>__ROUTING_KEY``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from remediation.alerting.labels import alert_annotations, rfc3339
from remediation.alerting.notification import Notification
from remediation.receivers.base import DeliveryError, HttpOptions, HttpReceiver

SEVERITIES = {"critical": "critical", "warning": "warning", "info": "info"}


class PagerDutyOptions(HttpOptions):
    url: str = "https://events.pagerduty.com/v2/enqueue"
    routing_key: SecretStr = Field(SecretStr(""), validate_default=True)
    source: str = ""
    component: str = "fabric"
    client_url: str = ""

    @field_validator("routing_key")
    @classmethod
    def _key(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value():
            raise ValueError("empty: set it from the environment (ROCEWATCH_REMEDIATION__"
                             "RECEIVERS__<i>__ROUTING_KEY)")
        return value


def event(n: Notification, routing_key: str, source: str, component: str,
          client_url: str = "") -> dict[str, Any]:
    """The Events v2 body for a notification."""
    if n.status == "resolved":
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": n.group_id}
    firing = n.firing
    worst = min(firing, key=lambda a: ("critical", "warning", "info").index(a.severity.value))
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": n.group_id,
        "payload": {
            "summary": n.title()[:1024],
            "source": source or worst.entity,
            "severity": SEVERITIES[worst.severity.value],
            "timestamp": rfc3339(n.wall(min(a.starts_ns for a in firing))),
            "component": component,
            "group": n.group_labels.get("entity", worst.entity),
            "class": worst.name,
            "custom_details": {
                "group_key": n.group_key,
                "firing": [{"alertname": a.name, "entity": a.entity, "fingerprint": a.fingerprint,
                            **alert_annotations(a)} for a in firing],
                "resolved": [a.fingerprint for a in n.resolved],
            },
        },
        "client": "rocewatch",
    }
    if client_url:
        body["client_url"] = client_url
    return body


class PagerDutyReceiver(HttpReceiver):
    name: ClassVar[str] = "pagerduty"
    Options: ClassVar[type[PagerDutyOptions]] = PagerDutyOptions
    options: PagerDutyOptions

    def __init__(self, instance: str, options: PagerDutyOptions, site: str = "",
                 **_: Any) -> None:
        super().__init__(instance, options)
        self._source = options.source or site

    def send(self, notification: Notification) -> str:
        o = self.options
        body = event(notification, o.routing_key.get_secret_value(), self._source, o.component,
                     o.client_url)
        response = self._http.post(o.url, body)
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if not isinstance(answer, dict):
            raise DeliveryError(f"PagerDuty answered {response.status_code} with a non-object",
                                retryable=False, status=response.status_code)
        return (f"{body['event_action']} {body['dedup_key']}: {response.status_code} "
                f"{answer.get('status', '')}").strip()
