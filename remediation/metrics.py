"""What the remediate role measures, for Prometheus (:mod:`pipeline.exposition`): open
incidents and alerts held, notifications by receiver and outcome (a failure is one that failed
after its retries), every audit record by action and outcome, the guarded runs by phase, whether
automation is halted, alerts muted, and the event time remediation has reached. Consumer lag per
partition comes from the front door's metered bus, like every consumer's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pipeline.exposition import Metrics
from remediation.service import Remediation

NS = 1_000_000_000


def watch(metrics: Metrics, service: Remediation) -> None:
    """Register the remediate role's families, read at each scrape."""
    metrics.collect("remediate", lambda: families(service))


def families(service: Remediation) -> Iterable[Metric]:
    health = service.health()
    yield GaugeMetricFamily("rocewatch_remediate_open_incidents",
                            "root-cause incidents firing now",
                            value=float(service.alerting.open_incidents()))
    yield GaugeMetricFamily("rocewatch_remediate_alerts_held",
                            "alerts the lifecycle holds (firing, or resolved and not yet "
                            "notified)", value=float(health.get("alerts_held", 0)))
    notified = CounterMetricFamily("rocewatch_remediate_notifications",
                                   "notifications by receiver and outcome (failed: after every "
                                   "retry)", labels=["receiver", "outcome"])
    records = CounterMetricFamily("rocewatch_remediate_actions",
                                  "audit records by action and outcome",
                                  labels=["action", "outcome"])
    by_record: Counter[tuple[str, str]] = Counter()
    for (action, receiver, outcome), count in sorted(dict(service.recorder.outcomes).items()):
        by_record[(action, outcome)] += count
        if action == "notify":
            notified.add_metric([receiver, outcome], float(count))
    for (action, outcome), count in sorted(by_record.items()):
        records.add_metric([action, outcome], float(count))
    yield notified
    yield records
    runs = GaugeMetricFamily("rocewatch_remediate_runs", "guarded runs (drains, isolations) "
                             "under way, by phase", labels=["phase"])
    for phase, count in sorted(Counter(health.get("runs_active", {}).values()).items()):
        runs.add_metric([phase], float(count))
    yield runs
    yield GaugeMetricFamily("rocewatch_remediate_halted",
                            "1 while automation is halted (too much looked broken at once)",
                            value=float(bool(health.get("halted"))))
    muted = CounterMetricFamily("rocewatch_remediate_muted_alerts",
                                "alert notifications muted, by why", labels=["reason"])
    for reason, count in sorted(health.get("muted", {}).items()):
        muted.add_metric([reason], float(count))
    yield muted
    yield CounterMetricFamily("rocewatch_remediate_audit_publish_failures",
                              "audit records the bus refused", value=float(
                                  health.get("audit_publish_failures", 0)))
    yield GaugeMetricFamily("rocewatch_remediate_event_time_seconds",
                            "the event time remediation has reached (Unix seconds)",
                            value=(health.get("watermark_ns") or 0) / NS)
