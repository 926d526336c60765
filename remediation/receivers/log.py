"""The ``log`` receiver: one log line per notification (the platform's own log, always on)."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from remediation.alerting.dispatch import ReceiverCaps
from remediation.alerting.notification import Notification
from remediation.receivers.base import RetryOptions

log = logging.getLogger("rocewatch.alerts")


class LogOptions(RetryOptions):
    level: str = "WARNING"


class LogReceiver:
    name: ClassVar[str] = "log"
    Options: ClassVar[type[LogOptions]] = LogOptions

    def __init__(self, instance: str, options: LogOptions, **_: Any) -> None:
        self.instance = instance
        self.options = options
        self._level = logging.getLevelName(options.level.upper())
        if not isinstance(self._level, int):
            self._level = logging.WARNING

    @property
    def caps(self) -> ReceiverCaps:
        return ReceiverCaps(send_resolved=self.options.send_resolved)

    def send(self, notification: Notification) -> str:
        for alert in notification.alerts:
            state = "firing" if notification.is_firing(alert) else "resolved"
            log.log(self._level, "%s %s %s on %s severity=%s root_cause=%s fingerprint=%s",
                    notification.receiver, state, alert.name, alert.entity,
                    alert.severity.value, alert.root_cause, alert.fingerprint)
        return f"logged {len(notification.alerts)} alert(s)"

    def close(self) -> None:
        """Nothing to release."""
