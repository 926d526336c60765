"""Remediation's event clock: the watermark, and when the stream passed a deadline."""

from __future__ import annotations

from remediation.clock import STEPS_KEPT, EventClock

S = 1_000_000_000


def test_reached_is_the_first_watermark_at_or_past_a_deadline():
    clock = EventClock()
    assert clock.reached(5 * S) is None  # no event time yet
    for t in (1, 3, 2, 8, 20):  # an older time does not step the watermark back
        clock.observe(t * S)
    assert clock.watermark_ns == 20 * S
    assert clock.reached(3 * S) == 3 * S
    assert clock.reached(5 * S) == 8 * S  # the stream jumped from 3 to 8: it passed 5 at 8
    assert clock.reached(0) == 1 * S  # before the first time seen: when the stream began
    assert clock.reached(21 * S) is None  # not passed yet


def test_a_deadline_older_than_the_steps_kept_is_not_answered():
    clock = EventClock()
    for t in range(1, STEPS_KEPT + 10):
        clock.observe(t * S)
    assert clock.reached(2 * S) is None  # forgotten: the caller uses the clock's now
    assert clock.reached((STEPS_KEPT + 5) * S) == (STEPS_KEPT + 5) * S
