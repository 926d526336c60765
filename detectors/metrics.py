"""What the detect role measures, for Prometheus (:mod:`pipeline.exposition`): the time of each
detection step (one poll's samples through the chain: every detector and the correlator), the
samples and messages judged, alerts published, symptoms and incidents raised, the series and
ports followed, and the event time detection has reached. Consumer lag per partition comes from
the front door's metered bus, like every consumer's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pipeline.exposition import Metrics

NS = 1_000_000_000

Health = Callable[[], dict[str, Any]]


def watch(metrics: Metrics, health: Health) -> Histogram:
    """Register the detect role's scrape-time families, read from the engine's health; returns
    the step-time histogram the loop observes."""
    metrics.collect("detect", lambda: families(health()))
    return metrics.histogram("rocewatch_detect_step_duration_seconds",
                             "time to judge one poll of samples (every detector and the "
                             "correlator) and publish what changed")


def families(h: dict[str, Any]) -> Iterable[Metric]:
    chain = h.get("chain", {})
    for name, doc, value in (
            ("messages", "samples messages judged", h.get("messages", 0)),
            ("undecodable_messages", "messages that could not be read (dead-lettered)",
             h.get("undecodable", 0)),
            ("published_alerts", "alert state changes published", h.get("published", 0)),
            ("samples", "samples judged", chain.get("samples", 0)),
            ("steps", "detection steps", chain.get("steps", 0)),
            ("symptoms", "symptoms raised", chain.get("symptoms", 0)),
            ("incidents", "root-cause incidents raised", chain.get("incidents", 0))):
        yield CounterMetricFamily(f"rocewatch_detect_{name}", doc, value=float(value))
    for name, doc, value in (
            ("series", "series followed", h.get("series", 0)),
            ("ports", "ports followed", h.get("ports", 0)),
            ("event_time_seconds", "the event time detection has reached (Unix seconds)",
             (h.get("now_ns") or 0) / NS)):
        yield GaugeMetricFamily(f"rocewatch_detect_{name}", doc, value=float(value))
