"""The ``smtp`` receiver: one plain-text email per notification.

Subject in Alertmanager's default shape (``[FIRING:1] faulty_link leaf2~spine1``); the body lists
each alert with its annotations and runbook. Transient SMTP replies (4xx) and connection failures
are retried, permanent ones (5xx) are not. The password comes from
``ROCEWATCH_REMEDIATION__RECEIVERS__<i>__PASSWORD``.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any, ClassVar

from pydantic import Field, SecretStr

from remediation.alerting.dispatch import ReceiverCaps
from remediation.alerting.labels import alert_annotations, rfc3339
from remediation.alerting.notification import Notification
from remediation.receivers.base import DeliveryError, RetryOptions


class SmtpOptions(RetryOptions):
    host: str = Field(min_length=1)
    port: int = Field(25, ge=1, le=65535)
    sender: str = Field(min_length=3)
    to: tuple[str, ...] = Field(min_length=1)
    starttls: bool = False
    username: str = ""
    password: SecretStr = SecretStr("")
    subject_prefix: str = ""


def email(n: Notification, sender: str, to: tuple[str, ...], prefix: str = "") -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = f"{prefix}{n.title()}"
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["Date"] = formatdate(n.wall_now_ns / 1e9, usegmt=True)
    msg["Message-ID"] = make_msgid(domain="rocewatch")
    msg["X-Rocewatch-Group"] = n.group_id
    lines = [n.title(), "", f"group: {n.group_key}", f"reason: {n.reason}", ""]
    for alert in n.alerts:
        state = "FIRING" if n.is_firing(alert) else "RESOLVED"
        lines.append(f"{state} {alert.name} on {alert.entity}")
        lines.append(f"  starts: {rfc3339(n.wall(alert.starts_ns))}")
        if alert.ends_ns is not None:
            lines.append(f"  ends:   {rfc3339(n.wall(alert.ends_ns))}")
        lines.append(f"  fingerprint: {alert.fingerprint}")
        for key, value in sorted(alert_annotations(alert).items()):
            lines.append(f"  {key}: {value}")
        lines.append("")
    msg.set_content("\n".join(lines))
    return msg


class SmtpReceiver:
    name: ClassVar[str] = "smtp"
    Options: ClassVar[type[SmtpOptions]] = SmtpOptions

    def __init__(self, instance: str, options: SmtpOptions, **_: Any) -> None:
        self.instance = instance
        self.options = options

    @property
    def caps(self) -> ReceiverCaps:
        return ReceiverCaps(send_resolved=self.options.send_resolved)

    def send(self, notification: Notification) -> str:
        o = self.options
        msg = email(notification, o.sender, o.to, o.subject_prefix)
        try:
            with smtplib.SMTP(o.host, o.port, timeout=o.timeout) as smtp:
                if o.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if o.username:
                    smtp.login(o.username, o.password.get_secret_value())
                refused = smtp.send_message(msg)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            raise DeliveryError(f"smtp {o.host}:{o.port}: every recipient refused: {codes}",
                                retryable=all(400 <= c < 500 for c in codes)) from exc
        except smtplib.SMTPResponseException as exc:
            raise DeliveryError(f"smtp {o.host}:{o.port}: {exc.smtp_code} {exc.smtp_error!r}",
                                retryable=400 <= exc.smtp_code < 500,
                                status=exc.smtp_code) from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise DeliveryError(f"smtp {o.host}:{o.port}: {type(exc).__name__}: {exc}",
                                retryable=True) from exc
        sent = len(o.to) - len(refused)
        return f"smtp {o.host}:{o.port}: sent to {sent} of {len(o.to)} recipient(s)"

    def close(self) -> None:
        """Connections are per message."""
