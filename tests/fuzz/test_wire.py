"""Property-based tests of the bus codecs (``pipeline/wire``): whatever bytes a topic carries, a
decoder raises nothing but :class:`~pipeline.errors.DecodeError`, and what a producer encodes
decodes back to what it encoded. The samples codec (columnar binary), the alerts, actions,
commands and dead-letter topics (JSON)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import DecodeError, RocewatchError
from pipeline.metrics import CATALOG
from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.times import MAX_INSTANT_NS
from pipeline.wire.actions import decode_actions, encode_actions
from pipeline.wire.alerts import decode_alerts, encode_alerts
from pipeline.wire.commands import decode_command, encode_command
from pipeline.wire.deadletter import decode_dead_letter, encode_dead_letter, letter_for
from pipeline.wire.samples import decode_batch, decode_samples, encode_batch
from tests.fuzz.budget import FUZZ, budget

#: names as devices and ports have them: printable, no NUL, never empty
names = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FFF,
                              exclude_categories=("Cs",)), min_size=1, max_size=24)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def batches(draw: st.DrawFn, max_rows: int = 40) -> SampleBatch:
    devices = tuple(draw(st.lists(names, min_size=1, max_size=5, unique=True)))
    ports = tuple(draw(st.lists(names, min_size=1, max_size=5, unique=True)))
    n = draw(st.integers(0, max_rows))

    def column(elements: st.SearchStrategy[Any], dtype: type[np.generic]) -> Any:
        return np.asarray(draw(st.lists(elements, min_size=n, max_size=n)), dtype=dtype)

    return SampleBatch(
        column(int64, np.int64), column(st.integers(0, len(devices) - 1), np.int32),
        column(st.integers(0, len(ports) - 1), np.int32),
        column(st.integers(0, len(CATALOG) - 1), np.uint16),
        column(st.integers(-(2**15), 2**15 - 1), np.int16),
        column(st.floats(allow_nan=True, allow_infinity=True), np.float64),
        column(st.integers(0, 255), np.uint8), devices, ports)


def same(a: SampleBatch, b: SampleBatch) -> bool:
    return (a.devices == b.devices and a.ports == b.ports and all(
        np.array_equal(getattr(a, c), getattr(b, c), equal_nan=c == "value")
        for c in ("ts_ns", "device", "port", "metric", "qual", "value", "flags")))


def only_our_error(decode: Callable[[bytes], Any], data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode(data)


# --- samples: columnar binary ---

@FUZZ
@given(batches())
def test_a_batch_round_trips_through_the_samples_codec(batch: SampleBatch) -> None:
    assert same(decode_batch(encode_batch(batch)), batch)


@FUZZ
@given(batches(max_rows=10), st.lists(st.text(max_size=6), min_size=1, max_size=4))
def test_names_of_any_text_travel_without_moving_a_row(batch: SampleBatch,
                                                      odd: list[str]) -> None:
    # names from outside may hold a NUL (the vocabulary's separator) or a lone surrogate
    renamed = SampleBatch(batch.ts_ns, batch.device, batch.port, batch.metric, batch.qual,
                          batch.value, batch.flags,
                          tuple(f"{d}{odd[i % len(odd)]}" for i, d in enumerate(batch.devices)),
                          tuple(f"{p}{odd[-1 - i % len(odd)]}" for i, p in enumerate(batch.ports)))
    back = decode_batch(encode_batch(renamed))
    assert same(back, SampleBatch(*(getattr(renamed, c) for c in (
        "ts_ns", "device", "port", "metric", "qual", "value", "flags")),
        tuple(map(carried, renamed.devices)), tuple(map(carried, renamed.ports))))


def carried(name: str) -> str:
    return "".join("\ufffd" if c == "\0" or "\ud800" <= c <= "\udfff" else c for c in name)


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes_are_refused_by_the_samples_codec_with_our_error(data: bytes) -> None:
    only_our_error(decode_samples, data)
    only_our_error(decode_samples, b"RWSB\x02\0\0\0" + data)  # past the magic and version


@FUZZ
@given(batches(max_rows=8), st.data())
def test_a_damaged_batch_is_refused_or_read_never_raises_else(batch: SampleBatch,
                                                             data: st.DataObject) -> None:
    raw = bytearray(encode_batch(batch))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    for damaged in (bytes(raw), bytes(raw[:cut]), bytes(raw) + data.draw(st.binary(max_size=9))):
        try:
            decoded = decode_samples(damaged)
        except DecodeError:
            continue
        # what is read is a valid batch: its codes point into its vocabularies and the catalog
        decoded.items.validate()


# --- the JSON topics ---

labels = st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), names,
                         max_size=3)
instants = st.integers(0, MAX_INSTANT_NS - 1)


@st.composite
def alerts(draw: st.DrawFn) -> Alert:
    starts = draw(instants)
    return Alert(name=draw(names), entity=draw(names), severity=draw(st.sampled_from(Severity)),
                 labels=draw(labels), annotations=draw(labels),
                 evidence=draw(st.dictionaries(names, st.floats(allow_nan=False,
                                                                allow_infinity=False),
                                               max_size=3)),
                 ports=tuple(draw(st.lists(names, max_size=3))),
                 root_cause=draw(st.booleans()), starts_ns=starts,
                 updated_ns=draw(st.integers(starts, MAX_INSTANT_NS - 1)),
                 ends_ns=draw(st.none() | instants), source=draw(st.text(max_size=12)))


@st.composite
def actions(draw: st.DrawFn) -> ActionResult:
    return ActionResult(action=draw(names), target=draw(names),
                        outcome=draw(st.sampled_from(("done", "refused", "failed", "pending",
                                                      "skipped"))),
                        detail=draw(st.text(max_size=40)), at_ns=draw(instants),
                        steps=tuple(draw(st.lists(st.dictionaries(names, st.integers(), max_size=2),
                                                  max_size=2))))


@FUZZ
@given(st.lists(alerts(), max_size=4))
def test_alerts_round_trip(items: list[Alert]) -> None:
    assert decode_alerts(encode_alerts(items)).whole("alerts") == items


@FUZZ
@given(st.lists(actions(), min_size=1, max_size=4))
def test_action_records_round_trip(items: list[ActionResult]) -> None:
    assert decode_actions(encode_actions(items)).whole("actions") == items


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                  max_size=4),
    max_leaves=20)


def as_json(value: Any) -> bytes:
    import json

    return json.dumps(value).encode()


@FUZZ
@given(st.one_of(json_values.map(as_json), st.binary(max_size=200)))
def test_every_json_topic_refuses_garbage_with_our_error(data: bytes) -> None:
    for decode in (decode_alerts, decode_actions, decode_command, decode_dead_letter):
        only_our_error(decode, data)


@FUZZ
@given(st.dictionaries(st.sampled_from(
    ("version", "kind", "target", "by", "comment", "id", "issued_at_ns", "run", "action",
     "matchers", "starts_ns", "ends_ns", "silence_id")), json_values, max_size=8),
       st.sampled_from(("approve", "reject", "repair", "drain", "silence", "expire_silence",
                        "resume", None)))
def test_a_command_of_any_shape_is_read_or_refused_with_our_error(doc: dict[str, Any],
                                                                  kind: str | None) -> None:
    if kind is not None:
        doc = {**doc, "kind": kind}
    only_our_error(decode_command, as_json(doc))


matcher_texts = st.builds(lambda name, op, value: f'{name}{op}"{value}"',
                          st.from_regex(r"[a-z_]{1,6}", fullmatch=True),
                          st.sampled_from(("=", "!=", "=~", "!~")),
                          st.text(st.characters(exclude_characters='"\\'), max_size=12))


@budget(0.5)
@given(st.lists(matcher_texts, min_size=1, max_size=3), instants, st.integers(1, 2**40))
def test_a_silence_command_round_trips_or_is_refused_with_our_error(
        matchers: list[str], starts: int, length: int) -> None:
    from pipeline.wire.commands import Silence

    try:
        command = Silence(matchers=tuple(matchers), starts_ns=starts,
                          ends_ns=min(MAX_INSTANT_NS - 1, starts + length), by="fuzz")
    except (ValueError, RocewatchError):  # pydantic's ValidationError is a ValueError
        return
    assert decode_command(encode_command(command)) == command


@FUZZ
@given(st.binary(max_size=300) | st.none(), st.binary(max_size=20) | st.none(), names)
def test_a_dead_letter_round_trips(value: bytes | None, key: bytes | None, reason: str) -> None:
    from pipeline.bus.base import Message

    letter = letter_for(Message("t.samples", 3, 17, key, value), reason, "ingest")
    back = decode_dead_letter(encode_dead_letter(letter))
    assert back == letter and back.value() == value and back.original_key() == key
