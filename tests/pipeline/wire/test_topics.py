"""Each topic's codec round-trips what its producers write, and keeps the good items of a message
that holds a bad one (sample rows, alerts, action records)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.bus.base import Message
from pipeline.errors import DecodeError
from pipeline.metrics import CATALOG, metric_id
from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.wire.actions import action_key, decode_actions, encode_actions
from pipeline.wire.alerts import decode_alerts, encode_alerts
from pipeline.wire.commands import (
    Approve,
    ExpireSilence,
    Reject,
    Repair,
    Resume,
    Silence,
    command_key,
    decode_command,
    encode_command,
)
from pipeline.wire.deadletter import decode_dead_letter, encode_dead_letter, letter_for
from pipeline.wire.items import BadItem
from pipeline.wire.samples import decode_batch, decode_samples, encode_batch


def alert(**over: Any) -> Alert:
    fields: dict[str, Any] = {
        "name": "faulty_link", "entity": "leaf3~spine2", "severity": Severity.CRITICAL,
        "labels": {"zone": "a"}, "annotations": {"summary": "FCS errors on both ends"},
        "evidence": {"fcs_rate": 1.5e-5}, "ports": ("leaf3:Ethernet1", "spine2:Ethernet3"),
        "root_cause": True, "confidence": 0.9, "explains": ("abc",), "inhibited_by": None,
        "starts_ns": 1_700_000_000_000_000_000, "updated_ns": 1_700_000_010_000_000_000,
        "ends_ns": None, "source": "corruption"}
    fields.update(over)
    return Alert(**fields)


def action(**over: Any) -> ActionResult:
    fields: dict[str, Any] = {
        "action": "drain", "target": "leaf3~spine2", "alert_fingerprint": "e850ad99e5b3d04d",
        "alert_name": "faulty_link", "mode": "auto", "outcome": "done",
        "detail": "drained", "steps": ({"step": "te", "ok": True},), "at_ns": 5}
    fields.update(over)
    return ActionResult(**fields)


def test_samples_round_trip(batch_factory: Any) -> None:
    batch = batch_factory(devices=1, ports=2, seconds=5)
    decoded = decode_samples(encode_batch(batch))
    assert decoded.bad == () and list(decoded.items.rows()) == list(batch.rows())


def test_alerts_round_trip() -> None:
    alerts = [alert(), alert(entity="leaf1~spine1", ends_ns=1_700_000_020_000_000_000,
                             severity=Severity.INFO, root_cause=False)]
    decoded = decode_alerts(encode_alerts(alerts))
    assert decoded.bad == () and decoded.items == alerts
    assert [a.fingerprint for a in decoded.items] == [a.fingerprint for a in alerts]
    assert decode_alerts(encode_alerts([])).items == []


def test_actions_round_trip_one_or_several_per_message() -> None:
    records = [action(), action(action="notify", target="oncall", outcome="failed", steps=())]
    assert decode_actions(encode_actions(records[:1])).items == records[:1]
    assert decode_actions(encode_actions(records)).items == records
    assert decode_actions(encode_actions(records) + b"\n\n").items == records  # blank lines
    assert action_key(records[0]) == b"leaf3~spine2"


@pytest.mark.parametrize("command", [
    Approve(target="leaf2~spine1", by="alice", comment="optics checked", run="r1"),
    Reject(target="leaf2~spine1", by="bob"),
    Repair(target="leaf2~spine1", by="carol", action="replace optic"),
    Silence(matchers=('entity="leaf9~spine9"', 'alertname=~"pfc.*"'), ends_ns=10**18,
            by="dave"),
    ExpireSilence(silence_id="abc", by="erin"),
    Resume(by="frank"),
])
def test_commands_round_trip(command: Any) -> None:
    assert decode_command(encode_command(command)) == command
    target = getattr(command, "target", "")
    assert command_key(command) == (target.encode() if target else None)


def test_dead_letters_round_trip() -> None:
    value = b'[{"name": 1}]'
    msg = Message("rw.alerts", 2, 41, b"\xffkey", value)
    letter = letter_for(msg, "1 bad item(s), 0 kept", "ingest",
                        (BadItem(index=0, reason="alert 0: name: not a string"),))
    again = decode_dead_letter(encode_dead_letter(letter))
    assert again == letter
    assert again.value() == value and again.original_key() == b"\xffkey"
    assert again.key == "\ufffdkey" and again.value_size == len(value)
    tombstone = letter_for(Message("rw.samples", 0, 7, None, None), "null", "detect")
    assert decode_dead_letter(encode_dead_letter(tombstone)).value() is None
    assert tombstone.value_size is None and tombstone.key_b64 is None


def test_a_dead_letter_of_a_huge_value_keeps_its_head_and_says_so() -> None:
    from pipeline.wire.deadletter import MAX_VALUE_BYTES

    value = bytes(range(256)) * (MAX_VALUE_BYTES // 256 + 10)
    letter = letter_for(Message("rw.samples", 0, 1, b"k", value), "too big", "ingest")
    assert letter.value_truncated and letter.value_size == len(value)
    assert letter.value() == value[:MAX_VALUE_BYTES]
    assert len(encode_dead_letter(letter)) < 1_000_000  # it fits a default Kafka message


def _rows(n: int, metric: list[int], device: list[int], port: list[int]) -> SampleBatch:
    return SampleBatch(np.arange(n, dtype=np.int64) + 1, np.asarray(device, np.int32),
                       np.asarray(port, np.int32), np.asarray(metric, np.uint16),
                       np.full(n, -1, np.int16), np.arange(n, dtype=np.float64),
                       np.zeros(n, np.uint8), ("leaf1",), ("Ethernet1", "Ethernet2"))


def test_a_batch_keeps_its_good_rows_and_reports_the_bad_ones() -> None:
    good = metric_id("if_in_octets")
    unknown = len(CATALOG)  # a newer producer's metric
    batch = _rows(6, metric=[good, unknown, good, unknown, good, good],
                  device=[0, 0, 0, 0, 3, 0], port=[0, 1, 1, 0, 0, 5])
    decoded = decode_samples(encode_batch(batch))
    assert [r[5] for r in decoded.items.rows()] == [0.0, 2.0]
    by_reason = {b.reason.split(" ")[0]: (b.index, b.count) for b in decoded.bad}
    assert by_reason == {"device": (4, 1), "port": (5, 1), "metric": (1, 2)}
    assert decoded.bad_count == 4
    with pytest.raises(DecodeError, match="4 bad item"):
        decode_batch(encode_batch(batch))


def test_an_alert_list_keeps_its_good_alerts() -> None:
    good = [alert(), alert(entity="leaf1~spine1")]
    data = (b"[" + encode_alerts(good[:1])[1:-1] + b', {"name": 5}, 7, ' +
            encode_alerts(good[1:])[1:-1] + b', {"extra": 1, ' + encode_alerts(good[:1])[2:-1]
            + b"]")
    decoded = decode_alerts(data)
    assert decoded.items == good
    assert [(b.index, b.reason.split(":")[0]) for b in decoded.bad] == [
        (1, "alert 1"), (2, "alert 2 is a JSON number, not an object"), (4, "alert 4")]
    assert "extra: Extra inputs are not permitted" in decoded.bad[2].reason


def test_an_actions_message_keeps_its_good_lines() -> None:
    records = [action(), action(target="leaf1~spine1")]
    lines = [encode_actions(records[:1]), b"{oops", b"[1]", b'{"action": "drain"}',
             encode_actions(records[1:]), b"\xff\xfe"]
    decoded = decode_actions(b"\n".join(lines))
    assert decoded.items == records
    assert [b.index for b in decoded.bad] == [1, 2, 3, 5]
    assert "not JSON" in decoded.bad[0].reason and "JSON array" in decoded.bad[1].reason
    assert "target: Field required" in decoded.bad[2].reason
