"""A known produced set of samples, and what a store holds of it: the yardstick of the failover
tests ("0 lost, 0 doubled").

The set is polls of several devices, consecutive in event time, one batch per device and poll
(what a collector publishes). :func:`tally` reads the store back through its own read path
(``FINAL``: one row per sample key) and counts, against the set, the samples lost, the ones the
read path returns twice, and the ones that should not be there; ``raw_repeats`` says how many
copies the table itself still holds before merges (a redelivery that replication or the
ReplacingMergeTree has not collapsed yet), for the record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.model import SampleBatch
from pipeline.store.base import Store
from tests.pipeline.conftest import make_batch

NS = 1_000_000_000
Key = tuple[str, str, str, int, int]


def polls(devices: int, rounds: int, ports: int = 4, seconds: int = 10) -> list[SampleBatch]:
    """``rounds`` polls of ``devices`` devices (:func:`tests.pipeline.conftest.make_batch`:
    counters with a reset, gauges), ``seconds`` of samples each, ending a minute ago (the store's
    retention and the ingest guard run on the wall clock); one batch per device and poll."""
    start = (time.time_ns() // NS - rounds * seconds - 60) * NS
    out: list[SampleBatch] = []
    for r in range(rounds):
        whole = make_batch(devices=devices, ports=ports, seconds=seconds,
                           start_ns=start + r * seconds * NS, seed=r)
        out.extend(whole.take(np.flatnonzero(whole.device == d)) for d in range(devices))
    return out


def keys_of(batches: list[SampleBatch]) -> set[Key]:
    keys: set[Key] = set()
    for b in batches:
        keys.update((dev, port, metric, qual, ts) for ts, dev, port, metric, qual, _, _
                    in b.rows())
    return keys


@dataclass(frozen=True)
class Tally:
    produced: int
    #: distinct sample keys the read path returns
    stored: int
    #: produced samples the store does not return
    lost: int
    #: rows the read path returns beyond one per key
    doubled: int
    #: keys the store returns that were never produced
    unknown: int
    #: rows the table holds beyond one per key before merges (informational)
    raw_repeats: int

    def __str__(self) -> str:
        return (f"produced {self.produced}, stored {self.stored}, lost {self.lost}, "
                f"doubled {self.doubled}, unknown {self.unknown} "
                f"(raw copies not merged yet: {self.raw_repeats})")


def stored_count(store: Store) -> int:
    """Distinct samples through the read path."""
    sql = f"SELECT count() AS n FROM {store.database}.samples FINAL"
    return int(store.query(sql)["n"][0])


def tally(store: Store, produced: set[Key]) -> Tally:
    d = store.dialect
    c = store.query(f"SELECT device, port, metric, qual, {d.time_ns('ts')} AS t "
                    f"FROM {store.database}.samples FINAL")
    rows: list[Key] = list(zip(c["device"], c["port"], c["metric"], c["qual"].tolist(),
                               c["t"].tolist(), strict=True))
    got = set(rows)
    raw = int(store.query(f"SELECT count() AS n FROM {store.database}.samples")["n"][0])
    return Tally(produced=len(produced), stored=len(got), lost=len(produced - got),
                 doubled=len(rows) - len(got), unknown=len(got - produced),
                 raw_repeats=raw - len(got))


def wait_for(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``check`` every 0.2 s until it returns something true; that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.2)
