"""The policy every consumer follows: what cannot be read is parked on the dead-letter topic with
its origin and reason, the good items of a message are kept, and nothing a message holds, whatever
the decoder raises, reaches the consumer as an exception."""

from __future__ import annotations

from pipeline.bus.base import Consumer, Message, Topics
from pipeline.bus.memory import MemoryBus
from pipeline.errors import DecodeError
from pipeline.model import Alert
from pipeline.wire.alerts import decode_alerts, encode_alerts
from pipeline.wire.deadletter import DeadLetter, DeadLetters, decode_dead_letter
from pipeline.wire.items import Decoded
from pipeline.wire.samples import decode_batch

TOPICS = Topics("dl.")


def setup() -> tuple[MemoryBus, DeadLetters, Consumer]:
    bus = MemoryBus(partitions=1)
    bus.ensure_topics(TOPICS.all())
    watcher = bus.consumer([TOPICS.deadletter], "watch")
    return bus, DeadLetters("ingest", bus.producer(), TOPICS.deadletter), watcher


def parked(watcher: Consumer) -> list[DeadLetter]:
    return [decode_dead_letter(m.value) for m in watcher.poll(0.2)]


def test_an_unreadable_message_is_parked_with_its_origin_and_reason() -> None:
    _, letters, watcher = setup()
    msg = Message(TOPICS.samples, 3, 1841, b"leaf17", b"RWSB\x02garbage")
    got = letters.read(msg, decode_batch)
    assert isinstance(got, DeadLetter) and "too short" in got.reason
    [letter] = parked(watcher)
    assert (letter.topic, letter.partition, letter.offset, letter.key, letter.group) == \
        (TOPICS.samples, 3, 1841, "leaf17", "ingest")
    assert letter.value() == msg.value and letter.reason == got.reason
    assert letters.stats.parked == letters.stats.unreadable == 1
    assert letters.stats.by_topic == {TOPICS.samples: 1}
    assert letters.stats.last.startswith(f"{TOPICS.samples}[3]@1841: ")


def test_a_message_with_some_bad_items_keeps_the_good_and_parks_the_rest() -> None:
    _, letters, watcher = setup()
    good = Alert(name="pfc_storm", entity="host3", starts_ns=1, updated_ns=2)
    value = b"[" + encode_alerts([good])[1:-1] + b', {"name": 5}, 3]'
    got = letters.read_items(Message(TOPICS.alerts, 0, 9, None, value), decode_alerts)
    assert isinstance(got, Decoded) and got.items == [good]
    [letter] = parked(watcher)
    assert letter.kept == 1 and [i.index for i in letter.items] == [1, 2]
    assert letter.reason.startswith("2 bad item(s), 1 kept; item 1: alert 1: name:")
    assert letter.key is None and letter.value() == value
    assert letters.stats.bad_items == 2 and letters.stats.unreadable == 0


def test_a_good_message_parks_nothing() -> None:
    _, letters, watcher = setup()
    good = Alert(name="pfc_storm", entity="host3", starts_ns=1, updated_ns=2)
    got = letters.read_items(Message(TOPICS.alerts, 0, 1, None, encode_alerts([good])),
                             decode_alerts)
    assert isinstance(got, Decoded) and got.items == [good] and got.bad == ()
    assert parked(watcher) == [] and letters.stats.parked == 0


def test_a_decoder_that_breaks_its_contract_does_not_stop_the_consumer() -> None:
    _, letters, watcher = setup()

    def broken(value: bytes | None) -> int:
        return len(value)  # type: ignore[arg-type]  # the bug of issue 11: None has no len()

    got = letters.read(Message(TOPICS.samples, 0, 5, b"leaf1", None), broken)
    assert isinstance(got, DeadLetter) and got.reason.startswith("TypeError: ")
    [letter] = parked(watcher)
    assert letter.value_b64 is None and letter.value_size is None


def test_without_a_producer_letters_only_reach_the_listener() -> None:
    heard: list[str] = []
    letters = DeadLetters("replay", listener=lambda letter: heard.append(letter.summary()))
    letters.read(Message("rw.samples", 1, 2, None, b""), decode_batch)
    letters.flush()  # nothing to flush
    assert heard == ["rw.samples[1]@2: sample batch: the value is empty"]


def test_a_dead_letter_that_is_not_one_is_refused() -> None:
    for value in (None, b"{}", b"[]", b'{"version": 2}', b"\x00"):
        try:
            decode_dead_letter(value)
        except DecodeError:
            continue
        raise AssertionError(f"{value!r} decoded")
