"""Ids answered from the per-device layout cache (:class:`detectors.series._Layouts`) are the ids
the names get without it, whatever mix of devices, layouts and new names the batches bring."""

from __future__ import annotations

import numpy as np

from detectors.series import SeriesIndex
from pipeline.model import SampleBatch

PORTS = tuple(f"Ethernet{i}" for i in range(6))


def _device_rows(rng: np.random.Generator, n_ports: int,
                 metrics: int) -> list[tuple[int, int, int]]:
    return [(p, m, q) for p in range(n_ports) for m in range(1, metrics + 1)
            for q in ((-1,) if m % 2 else (0, 3)) if rng.random() > 0.05]


def _batch(rng: np.random.Generator, layouts: dict[str, list[tuple[int, int, int]]],
           devices: list[str]) -> SampleBatch:
    """One batch of the given devices' runs (each device's run in its own layout), through
    vocabularies shuffled for this batch."""
    dev_vocab = [*devices, "unused"]
    rng.shuffle(dev_vocab)
    port_vocab = list(PORTS)
    rng.shuffle(port_vocab)
    cols: dict[str, list[int]] = {"device": [], "port": [], "metric": [], "qual": []}
    for d in devices:
        for p, m, q in layouts[d]:
            cols["device"].append(dev_vocab.index(d))
            cols["port"].append(port_vocab.index(PORTS[p]))
            cols["metric"].append(m)
            cols["qual"].append(q)
    n = len(cols["device"])
    return SampleBatch(np.full(n, 1, np.int64), np.array(cols["device"], np.int32),
                       np.array(cols["port"], np.int32), np.array(cols["metric"], np.uint16),
                       np.array(cols["qual"], np.int16), np.zeros(n), np.zeros(n, np.uint8),
                       tuple(dev_vocab), tuple(port_vocab))


def test_layout_cache_gives_the_ids_of_a_fresh_lookup() -> None:
    rng = np.random.default_rng(5)
    cached, plain = SeriesIndex(), SeriesIndex()
    devices = [f"leaf{i}" for i in range(8)]
    layouts = {d: _device_rows(rng, 6, 4) for d in devices}
    hits = 0
    for step in range(300):
        if step % 17 == 5:  # a device changes its layout: new series, or rows dropped
            d = str(rng.choice(devices))
            layouts[d] = _device_rows(rng, int(rng.integers(3, 7)), int(rng.integers(2, 6)))
        if step % 41 == 7:  # a new device joins
            devices.append(f"spine{step}")
            layouts[devices[-1]] = _device_rows(rng, 6, 4)
        chosen = [str(d) for d in rng.choice(devices, int(rng.integers(1, 5)), replace=False)]
        batch = _batch(rng, layouts, chosen)
        before = cached._layouts.find(batch, cached._device_id) is not None
        hits += before
        got = cached.ids(batch)
        want = plain._ids(batch)
        assert got.port.tolist() == want.port.tolist()
        assert got.series.tolist() == want.series.tolist()
        assert cached.devices == plain.devices and cached.port_name == plain.port_name
    assert hits > 100  # the cache answered most batches: the test exercised it
