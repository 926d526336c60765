"""Stable ids for what batches name: ports, and series (port × metric × qualifier).

A :class:`~pipeline.model.SampleBatch` names devices and ports through per-batch vocabularies;
detection keeps state in arrays indexed by stable ids. :class:`SeriesIndex` turns a batch's code
columns into global port ids and series ids without a per-row Python loop: vocabularies are mapped
once per distinct vocabulary (collectors reuse theirs batch after batch), device×port pairs once per
distinct pair in the batch, and series keys are looked up with a sorted-array search.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from pipeline.model import SampleBatch

#: bits of a series key given to the metric code and to the qualifier (+1, so -1 fits)
_METRIC_BITS = 12
_QUAL_BITS = 12
_QUAL_MAX = (1 << _QUAL_BITS) - 2


@dataclass(frozen=True)
class BatchIds:
    """Per-row ids of one batch, in the batch's row order."""

    port: NDArray[np.int64]
    series: NDArray[np.int64]


class SeriesIndex:
    """Global names → dense ids for devices, ports (``device:port``) and series."""

    def __init__(self) -> None:
        self.devices: list[str] = []
        self._device_id: dict[str, int] = {}
        #: per port id: device id, and the port's name on its device ("" for device-level rows)
        self.port_device: list[int] = []
        self.port_name: list[str] = []
        self._port_id: dict[tuple[int, str], int] = {}
        self._keys = np.empty(0, np.int64)  # sorted series keys
        self._key_ids = np.empty(0, np.int64)  # series id of each sorted key
        #: per series id: port id, metric code, qualifier
        self.series_port = np.empty(0, np.int64)
        self.series_metric = np.empty(0, np.int64)
        self.series_qual = np.empty(0, np.int64)
        self._vocab_cache: dict[int, tuple[tuple[str, ...], NDArray[np.int64]]] = {}
        #: the series keys of the last batch and their ids: a stream repeats its layout
        self._last: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
        #: the last batch's rows (vocabularies and code columns) and their ids
        self._last_rows: tuple[SampleBatch, BatchIds] | None = None
        #: the last vocabularies seen and their (device code × port code) → port id table
        self._pair_table: tuple[tuple[str, ...], tuple[str, ...], NDArray[np.int64]] | None = \
            None
        #: each device's rows as last seen, and their ids (:class:`_Layouts`)
        self._layouts = _Layouts()

    # -- names ------------------------------------------------------------------------------

    def device_id(self, name: str) -> int:
        did = self._device_id.get(name)
        if did is None:
            did = self._device_id[name] = len(self.devices)
            self.devices.append(name)
        return did

    def port_id(self, device: str, port: str) -> int:
        key = (self.device_id(device), port)
        pid = self._port_id.get(key)
        if pid is None:
            pid = self._port_id[key] = len(self.port_name)
            self.port_device.append(key[0])
            self.port_name.append(port)
        return pid

    def find_device(self, device: str) -> int | None:
        return self._device_id.get(device)

    def find_port(self, device: str, port: str) -> int | None:
        did = self._device_id.get(device)
        return None if did is None else self._port_id.get((did, port))

    def port_label(self, pid: int) -> str:
        """``device:port`` (or the device alone for device-level rows)."""
        device = self.devices[self.port_device[pid]]
        name = self.port_name[pid]
        return f"{device}:{name}" if name else device

    def device_of(self, pid: int) -> str:
        return self.devices[self.port_device[pid]]

    @property
    def n_ports(self) -> int:
        return len(self.port_name)

    @property
    def n_series(self) -> int:
        return int(self.series_port.shape[0])

    # -- batches ----------------------------------------------------------------------------

    def _device_codes(self, vocab: tuple[str, ...]) -> NDArray[np.int64]:
        cached = self._vocab_cache.get(id(vocab))
        if cached is not None and cached[0] is vocab:
            return cached[1]
        codes = np.fromiter((self.device_id(d) for d in vocab), np.int64, len(vocab))
        if len(self._vocab_cache) > 256:
            self._vocab_cache.clear()
        self._vocab_cache[id(vocab)] = (vocab, codes)
        return codes

    def ids(self, batch: SampleBatch) -> BatchIds:
        """Port and series ids for every row of ``batch`` (new names get new ids)."""
        n = len(batch)
        if n == 0:
            empty = np.empty(0, np.int64)
            return BatchIds(empty, empty)
        seen = self._last_rows
        if seen is not None and _same_rows(seen[0], batch):
            return seen[1]  # the very rows of the last batch (a live stream's next poll)
        known = self._layouts.find(batch, self._device_id)
        if known is not None:
            return known
        found = self._ids(batch)
        self._layouts.keep(batch, self._device_id, found)
        return found

    def _ids(self, batch: SampleBatch) -> BatchIds:
        """:meth:`ids` from the batch's names: every id a new name needs is assigned here, so the
        ids a batch gets do not depend on which earlier batches were answered from a cache."""
        port = self._port_ids(batch)
        qual = np.clip(batch.qual.astype(np.int64), -1, _QUAL_MAX) + 1
        metric = batch.metric.astype(np.int64) << _QUAL_BITS
        key = (port << (_METRIC_BITS + _QUAL_BITS)) | metric | qual
        last = self._last
        if last is not None and last[0].shape == key.shape and np.array_equal(last[0], key):
            self._last_rows = (batch, BatchIds(port, last[1]))
            return self._last_rows[1]  # the layout of the last batch again (a live stream)
        series = self._series_ids(key)
        self._last = (key, series)
        self._last_rows = (batch, BatchIds(port, series))
        return BatchIds(port, series)

    def _port_ids(self, batch: SampleBatch) -> NDArray[np.int64]:
        """Global port id per row, through a dense table over the batch's vocabularies (device
        code × port code: a gather per row, no sort of the rows) kept while the vocabularies
        repeat; pairs it does not hold yet are looked up once each. A batch whose vocabularies
        would make that table large goes through a unique of its rows instead."""
        n_dev, n_port = len(batch.devices), len(batch.ports)
        if n_dev * n_port > max(4 * len(batch), 1 << 16):
            gdev = self._device_codes(batch.devices)
            pair = (gdev[batch.device] << 32) | batch.port.astype(np.int64)
            uniq, inverse = np.unique(pair, return_inverse=True)
            by_pair: NDArray[np.int64] = self._pair_ids(uniq, batch.ports)[inverse]
            return by_pair
        cached = self._pair_table
        if cached is not None and cached[0] == batch.devices and cached[1] == batch.ports:
            table = cached[2]
        else:
            table = np.full(n_dev * n_port, -1, np.int64)
            self._pair_table = (batch.devices, batch.ports, table)
        flat = batch.device.astype(np.int64) * n_port + batch.port
        pid: NDArray[np.int64] = table[flat]
        if (pid < 0).any():
            present = np.zeros(n_dev * n_port, bool)
            present[flat[pid < 0]] = True
            local = np.flatnonzero(present)
            gdev = self._device_codes(batch.devices)
            pairs = (gdev[local // n_port] << 32) | (local % n_port)
            order = np.argsort(pairs, kind="stable")  # new ids in (device, port) order
            found = np.empty(local.shape[0], np.int64)
            found[order] = self._pair_ids(pairs[order], batch.ports)
            table[local] = found
            pid = table[flat]
        return pid

    def _pair_ids(self, pairs: NDArray[np.int64], ports: tuple[str, ...]) -> NDArray[np.int64]:
        """Port ids of ``(global device << 32) | batch port code`` pairs."""
        return np.fromiter(
            (self.port_id(self.devices[int(u >> 32)], ports[int(u & 0xFFFFFFFF)])
             for u in pairs), np.int64, len(pairs))

    def _series_ids(self, key: NDArray[np.int64]) -> NDArray[np.int64]:
        pos = np.searchsorted(self._keys, key)
        pos_c = np.minimum(pos, max(len(self._keys) - 1, 0))
        known = (len(self._keys) > 0) & (self._keys[pos_c] == key) if len(self._keys) else \
            np.zeros(key.shape, bool)
        if not known.all():
            new = np.unique(key[~known])
            first = self.n_series
            new_ids = np.arange(first, first + len(new), dtype=np.int64)
            self.series_port = np.concatenate([self.series_port,
                                               new >> (_METRIC_BITS + _QUAL_BITS)])
            self.series_metric = np.concatenate([self.series_metric,
                                                 (new >> _QUAL_BITS) & ((1 << _METRIC_BITS) - 1)])
            self.series_qual = np.concatenate([self.series_qual,
                                               (new & ((1 << _QUAL_BITS) - 1)) - 1])
            keys = np.concatenate([self._keys, new])
            ids = np.concatenate([self._key_ids, new_ids])
            order = np.argsort(keys, kind="stable")
            self._keys, self._key_ids = keys[order], ids[order]
            pos = np.searchsorted(self._keys, key)
        return self._key_ids[pos]


#: a device's rows as last seen: port name codes (:class:`_Layouts`), metric and qualifier
#: columns, and their port and series ids
_Layout = tuple[NDArray[np.int64], NDArray[np.uint16], NDArray[np.int16], NDArray[np.int64],
                NDArray[np.int64]]


class _Layouts:
    """Each device's rows as last seen, and their ids.

    A step's batch joins the polls of whichever switches answered since the last step, so its
    vocabularies and its rows differ from step to step and neither the last batch's ids nor its
    vocabulary's port table can be reused; yet each switch sends the same rows poll after poll.
    A batch whose every run of one device's rows is that device's last run (same port names,
    metrics and qualifiers, row for row) gets the ids those rows got, without a search of every
    series key: only batches that name nothing new are answered here, so ids are assigned as
    :meth:`SeriesIndex._ids` assigns them."""

    def __init__(self) -> None:
        #: port name → a code of its own (port names repeat across devices: "Ethernet0")
        self._name_code: dict[str, int] = {}
        #: (global device id, rows) → that run's layout
        self._runs: dict[tuple[int, int], _Layout] = {}

    def _names(self, ports: tuple[str, ...]) -> NDArray[np.int64]:
        codes = self._name_code
        return np.fromiter((codes.setdefault(p, len(codes)) for p in ports), np.int64,
                           len(ports))

    @staticmethod
    def _bounds(batch: SampleBatch) -> list[int]:
        """Where each run of one device's rows starts, and the end."""
        dev = batch.device
        cuts = np.flatnonzero(dev[1:] != dev[:-1]) + 1
        return [0, *cuts.tolist(), len(batch)]

    def find(self, batch: SampleBatch, device_id: dict[str, int]) -> BatchIds | None:
        """The ids of a batch made only of runs seen before, else None (``device_id``: the
        index's device ids, read here, never assigned)."""
        if not self._runs:
            return None
        bounds = self._bounds(batch)
        runs: list[_Layout] = []
        starts = batch.device[bounds[:-1]].tolist()
        for code, lo, hi in zip(starts, bounds, bounds[1:], strict=False):
            run = self._runs.get((device_id.get(batch.devices[code], -1), hi - lo))
            if run is None:
                return None
            runs.append(run)
        # the runs' rows, row for row, compared column by column over the whole batch at once
        if not (np.array_equal(_joined(runs, 1), batch.metric)
                and np.array_equal(_joined(runs, 2), batch.qual)
                and np.array_equal(_joined(runs, 0), self._names(batch.ports)[batch.port])):
            return None
        return BatchIds(_joined(runs, 3), _joined(runs, 4))

    def keep(self, batch: SampleBatch, device_id: dict[str, int], ids: BatchIds) -> None:
        """Remember every run of ``batch`` with its ids (copies: the batch's columns are not
        kept alive by a cache)."""
        if len(self._runs) > 4 * len(device_id) + 1024:
            self._runs.clear()  # layouts that keep changing: keep the cache to recent ones
        names = self._names(batch.ports)
        bounds = self._bounds(batch)
        for lo, hi in pairwise(bounds):
            self._runs[(device_id[batch.devices[batch.device[lo]]], hi - lo)] = (
                names[batch.port[lo:hi]], batch.metric[lo:hi].copy(), batch.qual[lo:hi].copy(),
                ids.port[lo:hi].copy(), ids.series[lo:hi].copy())


def _joined(runs: list[_Layout], field: int) -> NDArray[np.int64]:
    """One column of several runs' layouts, end to end (a new array: the kept runs are never
    handed out)."""
    return np.concatenate([r[field] for r in runs])


def _same_rows(a: SampleBatch, b: SampleBatch) -> bool:
    """Whether two batches name the same series row for row: same vocabularies and the same
    device, port, metric and qualifier codes (their times and values may differ)."""
    return (len(a) == len(b) and a.devices == b.devices and a.ports == b.ports
            and np.array_equal(a.device, b.device) and np.array_equal(a.port, b.port)
            and np.array_equal(a.metric, b.metric) and np.array_equal(a.qual, b.qual))
