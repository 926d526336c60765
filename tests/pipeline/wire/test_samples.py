"""The bus encoding of a SampleBatch: round trips, aligned columns, version 1 messages still read,
and garbage that must be refused clearly."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from pipeline.errors import DecodeError
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch
from pipeline.wire.samples import (
    ALIGN,
    ENCODING_OVERHEAD,
    MAGIC,
    ROW_BYTES,
    VERSION,
    decode_batch,
    encode_batch,
)


def test_round_trip_keeps_every_column_and_vocabulary(batch_factory: Any) -> None:
    batch = batch_factory()
    decoded = decode_batch(encode_batch(batch))
    assert list(decoded.rows()) == list(batch.rows())
    assert decoded.devices == batch.devices and decoded.ports == batch.ports
    for name in ("ts_ns", "device", "port", "metric", "qual", "value", "flags"):
        assert getattr(decoded, name).dtype == getattr(batch, name).dtype


def test_round_trip_of_unicode_names_and_an_empty_port() -> None:
    batch = SampleBatch(
        np.array([5, 6], np.int64), np.array([0, 0], np.int32), np.array([0, 1], np.int32),
        np.array([0, 1], np.uint16), np.array([-1, -1], np.int16), np.array([1.5, -2.0]),
        np.array([0, 2], np.uint8), ("lëaf-1",), ("", "Ethernet1/1"))
    assert list(decode_batch(encode_batch(batch)).rows()) == list(batch.rows())


def test_an_empty_batch_round_trips() -> None:
    assert len(decode_batch(encode_batch(SampleBatch.empty()))) == 0


def test_columns_are_views_over_the_message() -> None:
    data = encode_batch(SampleBatch(
        np.array([1], np.int64), np.array([0], np.int32), np.array([0], np.int32),
        np.array([0], np.uint16), np.array([-1], np.int16), np.array([1.0]),
        np.array([0], np.uint8), ("d",), ("p",)))
    assert decode_batch(data).value.base is not None


def _good(batch_factory: Any) -> bytes:
    return encode_batch(batch_factory(devices=1, ports=1, seconds=3))


@pytest.mark.parametrize("mangle, match", [
    (lambda b: b[:10], "too short"),
    (lambda b: b"XXXX" + b[4:], "not a sample batch"),
    (lambda b: b[:4] + bytes([9]) + b[5:], "version 9"),
    (lambda b: b[:-1], "should be"),
    (lambda b: b + b"\0", "should be"),
    (lambda b: b"", "empty"),
])
def test_garbage_is_a_decode_error(batch_factory: Any, mangle: Any, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_batch(mangle(_good(batch_factory)))


def _with(values: dict[str, np.ndarray], devices: bytes = b"d", ports: bytes = b"p") -> bytes:
    """A version 1 message (columns right after the vocabularies), written by hand."""
    n = len(values["ts_ns"])
    parts = [struct.pack("<4sB3xIII", MAGIC, 1, n, len(devices), len(ports)), devices, ports]
    for name, dtype in (("ts_ns", np.int64), ("device", np.int32), ("port", np.int32),
                        ("metric", np.uint16), ("qual", np.int16), ("value", np.float64),
                        ("flags", np.uint8)):
        parts.append(np.asarray(values[name], dtype).tobytes())
    return b"".join(parts)


def _cols(**over: Any) -> dict[str, np.ndarray]:
    cols = {"ts_ns": [1], "device": [0], "port": [0], "metric": [0], "qual": [-1],
            "value": [1.0], "flags": [0]}
    cols.update(over)
    return {k: np.asarray(v) for k, v in cols.items()}


def test_codes_outside_the_vocabularies_or_catalog_are_refused() -> None:
    assert len(decode_batch(_with(_cols()))) == 1
    with pytest.raises(DecodeError, match="device code"):
        decode_batch(_with(_cols(device=[1])))
    with pytest.raises(DecodeError, match="port code"):
        decode_batch(_with(_cols(port=[-1])))
    with pytest.raises(DecodeError, match="not in this consumer's catalog"):
        decode_batch(_with(_cols(metric=[len(CATALOG)])))
    with pytest.raises(DecodeError, match="UTF-8"):
        decode_batch(_with(_cols(), devices=b"\xff\xfe"))


def test_row_bytes_match_the_layout() -> None:
    one = len(_with(_cols()))
    two = len(_with(_cols(ts_ns=[1, 2], device=[0, 0], port=[0, 0], metric=[0, 0],
                          qual=[-1, -1], value=[1.0, 2.0], flags=[0, 0])))
    assert two - one == ROW_BYTES == 29


def _odd_batch(n: int, device: str = "leaf-7",
               ports: tuple[str, ...] = ("Ethernet1/1",)) -> SampleBatch:
    """``n`` rows with vocabularies of odd byte lengths: nothing lines up by accident."""
    rng = np.random.default_rng(n)
    return SampleBatch(
        np.arange(n, dtype=np.int64) * 1_000_000_007, np.zeros(n, np.int32),
        (np.arange(n) % len(ports)).astype(np.int32),
        rng.integers(0, len(CATALOG), n).astype(np.uint16), np.full(n, 3, np.int16),
        rng.random(n), (np.arange(n) % 4).astype(np.uint8), (device,), ports).validate()


@pytest.mark.parametrize("n", [1, 3, 7, 8, 1001])
def test_every_column_starts_on_an_8_byte_boundary(n: int) -> None:
    data = encode_batch(_odd_batch(n))
    assert data[4] == VERSION == 2
    decoded = decode_batch(data)
    base = np.frombuffer(data, np.uint8).ctypes.data
    for name in ("ts_ns", "device", "port", "metric", "qual", "value", "flags"):
        column = getattr(decoded, name)
        offset = column.ctypes.data - base
        assert offset % ALIGN == 0, (name, offset)
        assert column.flags.aligned and column.base is not None  # a view, not a copy
    assert list(decoded.rows()) == list(_odd_batch(n).rows())


def test_version_2_sizes_stay_within_the_overhead_publishers_plan_for() -> None:
    for n in (1, 2, 5, 64):
        for device in ("a", "leaf-12", "spine-0003"):
            batch = _odd_batch(n, device)
            vocab = len(device.encode()) + len(b"Ethernet1/1")
            size = len(encode_batch(batch))
            assert vocab + ROW_BYTES * n < size <= vocab + ROW_BYTES * n + ENCODING_OVERHEAD


def test_version_1_messages_still_decode(batch_factory: Any) -> None:
    batch = batch_factory(devices=1, ports=1, seconds=5)
    v1 = _with({name: getattr(batch, name) for name in
                ("ts_ns", "device", "port", "metric", "qual", "value", "flags")},
               devices=batch.devices[0].encode(), ports=batch.ports[0].encode())
    assert v1[4] == 1 and len(v1) == 20 + len(batch.devices[0]) + len(batch.ports[0]) + 29 * 10
    assert list(decode_batch(v1).rows()) == list(batch.rows())


def test_a_version_1_length_under_version_2_is_refused(batch_factory: Any) -> None:
    batch = batch_factory(devices=1, ports=1, seconds=3)
    v1 = _with({name: getattr(batch, name) for name in
                ("ts_ns", "device", "port", "metric", "qual", "value", "flags")},
               devices=b"leaf0", ports=b"Ethernet0")
    with pytest.raises(DecodeError, match="should be"):
        decode_batch(v1[:4] + bytes([2]) + v1[5:])


def test_non_zero_padding_is_refused() -> None:
    data = bytearray(encode_batch(_odd_batch(3)))
    header = 20 + len("leaf-7") + len("Ethernet1/1")
    assert header % ALIGN  # there is padding before the first column
    data[header] = 0xFF
    with pytest.raises(DecodeError, match="padding before ts_ns"):
        decode_batch(bytes(data))


def test_chdb_stores_decoded_batches_of_either_version_without_alignment_warnings(
        chdb_store: Any, batch_factory: Any, capfd: Any) -> None:
    """A version 1 message's views are misaligned, a version 2 message's are not; chDB is handed
    an Arrow stream of its own buffers either way, so it stores every row of both and Arrow
    warns about neither."""
    old = batch_factory(devices=1, ports=1, seconds=33, seed=1)
    v1 = _with({name: getattr(old, name) for name in
                ("ts_ns", "device", "port", "metric", "qual", "value", "flags")},
               devices=old.devices[0].encode(), ports=old.ports[0].encode())
    new = batch_factory(devices=1, ports=1, seconds=33, seed=2,
                        start_ns=int(old.ts_ns.max()) + 1_000_000_000)
    capfd.readouterr()
    chdb_store.insert_samples(decode_batch(v1))
    chdb_store.insert_samples(decode_batch(encode_batch(new)))
    assert "poorly aligned" not in capfd.readouterr().err
    stored = chdb_store.query(f"SELECT count() AS n FROM {chdb_store.database}.samples FINAL")
    assert int(stored["n"][0]) == len(old) + len(new)
