"""What the ingest role measures, for Prometheus (:mod:`pipeline.exposition`): rows, messages,
alerts and actions stored, insert latency, dead letters by topic, samples outside the time
window, store and bus failures, the ingest clock's lead, and the rollup job's progress. The
consumer lag per partition comes from the front door's metered bus, like every consumer's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pipeline.exposition import Kind, Metrics
from pipeline.store.rollup.job import RollupStats
from pipeline.wire.deadletter import DeadLetterStats

NS = 1_000_000_000

#: IngestStats field → (kind, help)
INGEST: dict[str, tuple[Kind, str]] = {
    "messages": ("counter", "bus messages stored and committed"),
    "samples": ("counter", "sample rows stored"),
    "alerts": ("counter", "alert state changes stored"),
    "actions": ("counter", "action records stored"),
    "inserts": ("counter", "inserts into the store"),
    "store_errors": ("counter", "inserts the store refused (retried)"),
    "bus_errors": ("counter", "polls or flushes the bus refused (retried)"),
    "commit_failures": ("counter", "offset commits the bus refused (the work is redone)"),
    "out_of_window": ("counter", "sample rows dead-lettered for a time outside the window"),
    "clock_lead_s": ("gauge", "how far the ingest clock runs ahead of the wall clock, seconds"),
}


def insert_seconds(metrics: Metrics) -> Histogram:
    return metrics.histogram("rocewatch_ingest_insert_duration_seconds",
                             "time to insert one gathered batch into the store")


def watch(metrics: Metrics, stats: Callable[[], dict[str, Any]],
          letters: Callable[[], DeadLetterStats], rollup: Callable[[], RollupStats]) -> None:
    """Register the ingest role's scrape-time families (sources read at each scrape, so a
    restarted loop's new objects are the ones read)."""
    metrics.stats("ingest", "ingest", stats, INGEST)
    metrics.collect("ingest.dead_letters", lambda: dead_letters(letters()))
    metrics.collect("ingest.rollup", lambda: rollups(rollup()))


def dead_letters(s: DeadLetterStats) -> Iterable[Metric]:
    by_topic = CounterMetricFamily("rocewatch_ingest_dead_letters",
                                   "messages the ingest group parked on the dead-letter topic, "
                                   "by the topic they came from", labels=["topic"])
    for topic, count in sorted(s.by_topic.items()):
        by_topic.add_metric([topic], float(count))
    yield by_topic
    yield CounterMetricFamily("rocewatch_ingest_unreadable_messages",
                              "messages that could not be read at all", value=float(s.unreadable))
    yield CounterMetricFamily("rocewatch_ingest_bad_items",
                              "items left out of messages whose other items were stored",
                              value=float(s.bad_items))


def rollups(s: RollupStats) -> Iterable[Metric]:
    rolled = CounterMetricFamily("rocewatch_rollup_buckets", "buckets rolled, by rollup and "
                                 "whether complete or again for late samples",
                                 labels=["rollup", "pass"])
    for name, count in sorted(s.rolled.items()):
        rolled.add_metric([name, "complete"], float(count))
    for name, count in sorted(s.rerolled.items()):
        rolled.add_metric([name, "late"], float(count))
    yield rolled
    watermark = GaugeMetricFamily("rocewatch_rollup_watermark_seconds",
                                  "event time every bucket before which is rolled, by rollup "
                                  "(Unix seconds)", labels=["rollup"])
    for name, done in sorted(s.done_ns.items()):
        watermark.add_metric([name], done / NS)
    yield watermark
    yield GaugeMetricFamily("rocewatch_rollup_event_time_seconds",
                            "the data's event time as the rollup job last saw it (Unix seconds)",
                            value=s.event_ns / NS)
    yield CounterMetricFamily("rocewatch_rollup_runs", "rollup job runs", value=float(s.runs))
    yield CounterMetricFamily("rocewatch_rollup_failures", "rollup job runs that failed",
                              value=float(s.failures))
