"""The bus encoding of a SampleBatch: round trips, and garbage that must be refused clearly."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from pipeline.codec import MAGIC, ROW_BYTES, decode_batch, encode_batch
from pipeline.errors import DecodeError
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch


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
    (lambda b: b"", "too short"),
])
def test_garbage_is_a_decode_error(batch_factory: Any, mangle: Any, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_batch(mangle(_good(batch_factory)))


def _with(values: dict[str, np.ndarray], devices: bytes = b"d", ports: bytes = b"p") -> bytes:
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
    with pytest.raises(DecodeError, match="not in the catalog"):
        decode_batch(_with(_cols(metric=[len(CATALOG)])))
    with pytest.raises(DecodeError, match="UTF-8"):
        decode_batch(_with(_cols(), devices=b"\xff\xfe"))


def test_row_bytes_match_the_layout() -> None:
    one = len(_with(_cols()))
    two = len(_with(_cols(ts_ns=[1, 2], device=[0, 0], port=[0, 0], metric=[0, 0],
                          qual=[-1, -1], value=[1.0, 2.0], flags=[0, 0])))
    assert two - one == ROW_BYTES == 29
