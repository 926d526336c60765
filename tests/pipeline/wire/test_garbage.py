"""Every decoder of the wire, fed every kind of garbage, raises our DecodeError and nothing else:
a tombstone (None), no bytes, every truncation of a good message, random bytes, JSON of every
wrong shape, JSON nested past the parser's depth, text that is not UTF-8."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pipeline.errors import DecodeError
from pipeline.model import ActionResult, Alert
from pipeline.wire.actions import decode_actions, encode_actions
from pipeline.wire.alerts import decode_alerts, encode_alerts
from pipeline.wire.commands import Approve, decode_command, encode_command
from pipeline.wire.deadletter import decode_dead_letter, encode_dead_letter, letter_for
from pipeline.wire.samples import decode_samples, encode_batch

NS = 1_000_000_000


def _good_samples() -> bytes:
    from tests.pipeline.conftest import make_batch

    return encode_batch(make_batch(devices=1, ports=2, seconds=3, start_ns=NS))


def _good_alerts() -> bytes:
    return encode_alerts([Alert(name="pfc_storm", entity="host3", starts_ns=1,
                                updated_ns=2)])


def _good_actions() -> bytes:
    return encode_actions([ActionResult(action="notify", target="oncall", outcome="done",
                                        at_ns=1)])


def _good_command() -> bytes:
    return encode_command(Approve(target="leaf1~spine1", by="alice"))


def _good_letter() -> bytes:
    from pipeline.bus.base import Message

    return encode_dead_letter(letter_for(Message("t", 0, 1, b"k", b"v"), "why", "ingest"))


#: name → (decoder, a good message)
DECODERS: dict[str, tuple[Callable[[bytes | None], Any], Callable[[], bytes]]] = {
    "samples": (decode_samples, _good_samples),
    "alerts": (decode_alerts, _good_alerts),
    "actions": (decode_actions, _good_actions),
    "commands": (decode_command, _good_command),
    "deadletter": (decode_dead_letter, _good_letter),
}


def only_our_error(decode: Callable[[bytes | None], Any], value: Any) -> bool:
    """Decode ``value``; any outcome but a DecodeError or a result fails the test. True when it
    decoded."""
    try:
        decode(value)
    except DecodeError as exc:
        assert str(exc), "a DecodeError must say what was wrong"
        return False
    return True


def unread(decode: Callable[[bytes | None], Any], value: Any) -> bool:
    """True when ``value`` was refused (DecodeError: the message cannot be read at all), or read
    with some item reported bad (the lines of an actions message are read one by one); any other
    exception fails the test."""
    try:
        result = decode(value)
    except DecodeError:
        return True
    return bool(getattr(result, "bad", ()))


@pytest.fixture(params=sorted(DECODERS))
def codec(request: pytest.FixtureRequest) -> tuple[Callable[[bytes | None], Any], bytes]:
    decode, good = DECODERS[request.param]
    return decode, good()


def test_the_good_message_decodes(codec: Any) -> None:
    decode, good = codec
    assert only_our_error(decode, good) and not unread(decode, good)


@pytest.mark.parametrize("value", [None, b"", b" ", b"\n", b"\x00", "text, not bytes", 17])
def test_tombstones_and_empty_values_are_refused(codec: Any, value: Any) -> None:
    decode, _ = codec
    assert unread(decode, value)


def test_every_truncation_is_refused_or_has_its_cut_item_reported(codec: Any) -> None:
    decode, good = codec
    assert all(unread(decode, good[:n]) for n in range(len(good)))


def test_random_bytes_are_refused(codec: Any) -> None:
    decode, good = codec
    rng = np.random.default_rng(11)
    for size in (1, 3, 19, 20, 21, 64, 1000, len(good)):
        for _ in range(40):
            assert unread(decode, rng.bytes(size))


def test_flipped_bytes_of_a_good_message_raise_nothing_else(codec: Any) -> None:
    decode, good = codec
    rng = np.random.default_rng(7)
    for _ in range(300):
        data = bytearray(good)
        for i in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            data[i] = int(rng.integers(0, 256))
        only_our_error(decode, bytes(data))


@pytest.mark.parametrize("doc", [
    "null", "true", "0", "-1.5e308", "1e999", '"a string"', "[]", "{}", "[[]]", "[null]",
    '{"name": []}', '[{"name": {"a": 1}}]', "[" * 100_000, "9" * 10_000,
    '{"kind": ["approve"]}', '{"kind": "approve", "target": 5, "by": null}',
    '"\\ud800"', "NaN", "[1, 2", '{"a": 1} trailing',
])
def test_json_of_the_wrong_shape_is_refused_or_read_never_raises_else(codec: Any,
                                                                       doc: str) -> None:
    decode, _ = codec
    only_our_error(decode, doc.encode())


def test_json_nested_past_the_parser_depth_is_refused(codec: Any) -> None:
    decode, _ = codec
    assert unread(decode, b"[" * 100_000 + b"]" * 100_000)
    assert unread(decode, b'{"a":' * 50_000 + b"1" + b"}" * 50_000)


def test_text_that_is_not_utf8_is_refused_or_its_item_reported(codec: Any) -> None:
    decode, _ = codec
    assert unread(decode, b'{"name": "\xff\xfe"}')
    assert unread(decode, '{"name": "x"}'.encode("utf-16"))


@pytest.mark.parametrize("doc", [{"name": "x"}, 5, "x", None, {"alerts": []}])
def test_an_alert_message_that_is_no_array_is_refused(doc: Any) -> None:
    with pytest.raises(DecodeError, match="JSON array"):
        decode_alerts(json.dumps(doc).encode())


def test_an_alert_array_of_garbage_items_is_read_with_every_item_bad() -> None:
    decoded = decode_alerts(json.dumps([None, 1, "x", [], {}, {"name": "a"}]).encode())
    assert decoded.items == [] and [b.index for b in decoded.bad] == [0, 1, 2, 3, 4, 5]


def test_a_samples_header_that_claims_more_than_it_holds_is_refused() -> None:
    good = bytearray(_good_samples())
    for field_at in (8, 12, 16):  # n, D, P
        data = bytearray(good)
        data[field_at:field_at + 4] = (0xFFFFFFFF).to_bytes(4, "little")
        with pytest.raises(DecodeError, match="should be"):
            decode_samples(bytes(data))
