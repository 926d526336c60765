"""The ``alertmanager`` receiver: post alerts to an Alertmanager's API v2 (``POST
/api/v2/alerts``), the way Prometheus does.

**Labels** are what its routes match: the alert's identity plus ``severity``, ``root_cause`` and
``entity_kind`` (:func:`~remediation.alerting.labels.match_labels`), so the usual route
``severity="critical"`` pages. Alertmanager identifies an alert by its labels, so when an
incident's severity or verdict changes, the label set sent before is resolved in the same post
and the new one fires (an escalation is a new alert there, as with Prometheus rules).

**Times are Alertmanager's wall clock**: each event time goes through the fabric clock's offset
(:meth:`~remediation.alerting.notification.Notification.wall`), so a run compressed twenty-fold
or a fabric clock ahead of the receiver's never puts ``startsAt`` in its future. Alertmanager
expires a firing alert at its ``endsAt``, so firing alerts are sent with ``endsAt`` = now +
``ends_after`` (wall) and re-sent every ``resend`` (which must be shorter): the receiver caps its
groups' repeat and flush intervals at ``resend``. A resolved alert is sent with its real end,
never later than now on the receiver's clock, so the resolve is always honoured. Alertmanager
then does its own grouping, silencing and routing.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from pydantic import model_validator

from pipeline.config import Duration
from pipeline.model import Alert
from remediation.alerting.dispatch import ReceiverCaps
from remediation.alerting.labels import alert_annotations, match_labels, rfc3339
from remediation.alerting.notification import Notification
from remediation.receivers.base import HttpOptions, HttpReceiver, where

API_PATH = "/api/v2/alerts"
#: label sets remembered (the newest first out); a forgotten one is simply not resolved early
MAX_SENT = 100_000


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


def postable(alert: Alert, n: Notification, ends_after_s: float, generator_url: str = "",
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    """One alert in API v2's ``postableAlert`` shape, its times on the receiver's clock."""
    now = n.wall_now_ns
    if n.is_firing(alert):
        ends = now + int(ends_after_s * 1e9)
    else:
        ends = min(n.wall(alert.ends_ns or n.at_ns), now)
    return {
        "labels": labels if labels is not None else match_labels(alert, n.kind(alert)),
        "annotations": alert_annotations(alert),
        "startsAt": rfc3339(min(n.wall(alert.starts_ns), now)),
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
        #: fingerprint → the label set Alertmanager holds for it
        self._sent: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    @property
    def caps(self) -> ReceiverCaps:
        return ReceiverCaps(send_resolved=True, max_repeat_s=self.options.resend)

    def body(self, notification: Notification) -> tuple[list[dict[str, Any]],
                                                        dict[str, dict[str, str] | None]]:
        """The post for a notification (its alerts, and the end of label sets they left) and
        what Alertmanager holds once it took it (fingerprint → label set, None: nothing)."""
        o = self.options
        out = []
        after: dict[str, dict[str, str] | None] = {}
        with self._lock:
            sent = dict(self._sent)
        for alert in notification.alerts:
            fp = alert.fingerprint
            labels = match_labels(alert, notification.kind(alert))
            before = sent.get(fp)
            if not notification.is_firing(alert):
                out.append(postable(alert, notification, o.ends_after, o.generator_url,
                                    before or labels))
                after[fp] = None
                continue
            if before is not None and before != labels:  # the old set ends now
                ended = alert.model_copy(update={"ends_ns": notification.at_ns})
                out.append(postable(ended, notification, o.ends_after, o.generator_url,
                                    before))
            out.append(postable(alert, notification, o.ends_after, o.generator_url, labels))
            after[fp] = labels
        return out, after

    def send(self, notification: Notification) -> str:
        body, after = self.body(notification)
        response = self._http.post(self._url, body)
        with self._lock:  # taken: remember what Alertmanager now holds
            for fp, labels in after.items():
                self._sent.pop(fp, None)
                if labels is not None:
                    self._sent[fp] = labels
            while len(self._sent) > MAX_SENT:
                del self._sent[next(iter(self._sent))]
        return f"{where(self._url)} {response.status_code}: {len(body)} alert(s)"
