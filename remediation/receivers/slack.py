"""The ``slack`` receiver: a Slack-style incoming webhook (``{"text": ..., "blocks": [...]}``).

The webhook URL is the secret: set it with ``ROCEWATCH_REMEDIATION__RECEIVERS__<i>__URL``. The
message has a plain ``text`` fallback (what notifications and clients without blocks show) and
one section per alert.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from remediation.alerting.labels import alert_annotations
from remediation.alerting.notification import Notification
from remediation.receivers.base import HttpOptions, HttpReceiver

ICONS = {"firing": ":red_circle:", "resolved": ":large_green_circle:"}


class SlackOptions(HttpOptions):
    channel: str = ""
    username: str = "rocewatch"
    max_alerts: int = Field(10, ge=1, le=45)  # Slack allows 50 blocks per message


def message(n: Notification, channel: str = "", username: str = "",
            max_alerts: int = 10) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": n.title()[:150]}}]
    for alert in n.alerts[:max_alerts]:
        state = "firing" if n.is_firing(alert) else "resolved"
        ann = alert_annotations(alert)
        lines = [f"{ICONS[state]} *{alert.name}* on `{alert.entity}` ({ann['severity']})"]
        if "ports" in ann:
            lines.append(f"ports: {ann['ports']}")
        if "runbook" in ann:
            lines.append(f"runbook: {ann['runbook']}")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
    if len(n.alerts) > max_alerts:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"and {len(n.alerts) - max_alerts} more"}]})
    body: dict[str, Any] = {"text": n.title(), "blocks": blocks}
    if channel:
        body["channel"] = channel
    if username:
        body["username"] = username
    return body


class SlackReceiver(HttpReceiver):
    name: ClassVar[str] = "slack"
    Options: ClassVar[type[SlackOptions]] = SlackOptions
    options: SlackOptions

    def send(self, notification: Notification) -> str:
        o = self.options
        response = self._http.post(o.url, message(notification, o.channel, o.username,
                                                  o.max_alerts))
        return f"slack {response.status_code}"

