"""The ``alertmanager`` receiver: post alerts to an Alertmanager's API v2 (``POST
/api/v2/alerts``), the way Prometheus does.

Alertmanager expires a firing alert at its ``endsAt``, so firing alerts are sent with ``endsAt`` =
flush time + ``ends_after`` and re-sent every ``resend`` (which must be shorter): the receiver
caps its groups' repeat and flush intervals at ``resend``. Resolved alerts are sent once with
their real ``endsAt``. Alertmanager then does its own grouping, silencing and routing.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from pipeline.config import Duration
from pipeline.model import Alert
from remediation.alerting.dispatch import ReceiverCaps
from remediation.alerting.labels import alert_annotations, rfc3339
from remediation.alerting.notification import Notification
from remediation.receivers.base import HttpOptions, HttpReceiver, where

API_PATH = "/api/v2/alerts"


class AlertmanagerOptions(HttpOptions):
    """``url`` is the Alertmanager's base URL (``http://am:9093``)."""

    resend: Duration = 60.0
    ends_after: Duration = 300.0
    generator_url: str = ""

    @model_validator(mode="after")
    def _resend_before_end(self) -> AlertmanagerOptions:
        if not 0 < self.resend < self.ends_after:
            raise ValueError("resend must be shorter than ends_after, or alerts expire "
                             "in Alertmanager between two sends")
        return self


def postable(alert: Alert, at_ns: int, ends_after_s: float, generator_url: str = "") -> dict[
        str, Any]:
    """One alert in API v2's ``postableAlert`` shape."""
    firing = alert.ends_ns is None or alert.ends_ns > at_ns
    ends = at_ns + int(ends_after_s * 1e9) if firing else alert.ends_ns
    return {
        "labels": alert.identity,
        "annotations": alert_annotations(alert),
        "startsAt": rfc3339(alert.starts_ns),
        "endsAt": rfc3339(ends),
        "generatorURL": generator_url,
    }


class AlertmanagerReceiver(HttpReceiver):
    name: ClassVar[str] = "alertmanager"
    Options: ClassVar[type[AlertmanagerOptions]] = AlertmanagerOptions
    options: AlertmanagerOptions

    def __init__(self, instance: str, options: AlertmanagerOptions, **_: Any) -> None:
        super().__init__(instance, options)
        self._url = options.url.rstrip("/") + API_PATH

    @property
    def caps(self) -> ReceiverCaps:
        return ReceiverCaps(send_resolved=True, max_repeat_s=self.options.resend)

    def send(self, notification: Notification) -> str:
        o = self.options
        body = [postable(a, notification.at_ns, o.ends_after, o.generator_url)
                for a in notification.alerts]
        response = self._http.post(self._url, body)
        return f"{where(self._url)} {response.status_code}: {len(body)} alert(s)"
