"""Publishing samples on the bus: per-device keys, messages kept under the size limit.

A device's samples always go to one partition (the key is the device name), so its order holds
for every consumer; a batch of several devices is split per device, with its vocabularies cut to
what each piece uses, and a piece that would encode larger than ``max_bytes`` is split into
consecutive pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.bus.base import Producer, Topics
from pipeline.model import SampleBatch
from pipeline.wire.samples import ENCODING_OVERHEAD, ROW_BYTES, encode_batch


def publish_batches(producer: Producer, topics: Topics, batches: Sequence[SampleBatch],
                    max_bytes: int = 900_000) -> int:
    """Send batches to the samples topic keyed by device, so a device's order holds: a batch of
    several devices is split per device, and one larger than ``max_bytes`` encoded is split into
    consecutive pieces. Returns the messages sent."""
    sent = 0
    for batch in batches:
        for device_batch in _per_device(batch):
            key = device_batch.devices[int(device_batch.device[0])].encode()
            for piece in _pieces(device_batch, max_bytes):
                producer.send(topics.samples, encode_batch(piece), key=key)
                sent += 1
    return sent


def _per_device(batch: SampleBatch) -> list[SampleBatch]:
    if not len(batch):
        return []
    first = batch.device[0]
    if bool((batch.device == first).all()):
        return [batch]
    order = np.argsort(batch.device, kind="stable")
    codes = batch.device[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)]
    return [_compact(batch.take(order[a:b])) for a, b in zip(starts, ends, strict=True)]


def _compact(batch: SampleBatch) -> SampleBatch:
    """A one-device batch with vocabularies cut down to what it uses."""
    used, port_codes = np.unique(batch.port, return_inverse=True)
    return SampleBatch(
        batch.ts_ns, np.zeros(len(batch), np.int32), port_codes.astype(np.int32), batch.metric,
        batch.qual, batch.value, batch.flags, (batch.devices[int(batch.device[0])],),
        tuple(batch.ports[int(i)] for i in used))


def _pieces(batch: SampleBatch, max_bytes: int) -> list[SampleBatch]:
    vocab = sum(len(d.encode()) + 1 for d in batch.devices) + \
        sum(len(p.encode()) + 1 for p in batch.ports)
    per_piece = max(1, (max_bytes - ENCODING_OVERHEAD - vocab) // ROW_BYTES)
    if len(batch) <= per_piece:
        return [batch]
    return [batch.take(np.arange(a, min(a + per_piece, len(batch))))
            for a in range(0, len(batch), per_piece)]
