"""On-call receivers: the ``rocewatch.actions`` plugins that turn a notification into a
delivery (log, Alertmanager webhook v4 and API v2, PagerDuty Events v2, Slack, SMTP)."""
