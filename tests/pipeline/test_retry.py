"""The one retry policy: delays that grow to the cap with full jitter, Retry-After honoured and
capped, the streak reset by a success or a healthy period, the attempt and deadline budgets; all
on a seeded random source and a hand-moved clock, so nothing here sleeps."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from pipeline.errors import ConfigError
from pipeline.retry import Backoff, RetryPolicy, parse_retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_ceilings_grow_by_the_multiplier_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_s=0.5, cap_s=6.0)
    assert [policy.ceiling(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 6.0, 6.0]
    assert RetryPolicy(initial_s=1, cap_s=100, multiplier=3).ceiling(4) == 27.0
    assert policy.ceiling(100_000) == 6.0  # a streak that long is at the cap, not an overflow
    with pytest.raises(ValueError):
        policy.ceiling(0)


def test_full_jitter_spreads_each_delay_over_zero_to_its_ceiling() -> None:
    policy = RetryPolicy(initial_s=1.0, cap_s=8.0)
    rng = random.Random(3)
    for failures in range(1, 7):
        ceiling = policy.ceiling(failures)
        draws = [policy.delay(failures, rng) for _ in range(4000)]
        assert all(0.0 <= d <= ceiling for d in draws)
        # full jitter: the whole range is used, centred on half the ceiling
        assert min(draws) < 0.02 * ceiling and max(draws) > 0.98 * ceiling
        assert 0.45 * ceiling < sum(draws) / len(draws) < 0.55 * ceiling


def test_the_same_seed_gives_the_same_delays() -> None:
    policy = RetryPolicy(initial_s=0.2, cap_s=5.0)
    first = [policy.delay(n, random.Random(11)) for n in range(1, 9)]
    again = [policy.delay(n, random.Random(11)) for n in range(1, 9)]
    assert first == again
    assert first != [policy.delay(n, random.Random(12)) for n in range(1, 9)]


def test_retry_after_is_a_floor_and_the_cap_still_holds() -> None:
    policy = RetryPolicy(initial_s=0.1, cap_s=30.0)
    rng = random.Random(5)
    assert policy.delay(1, rng, retry_after_s=3.0) == 3.0
    assert policy.delay(1, rng, retry_after_s=0.0) <= 0.1  # "now" leaves the jitter alone
    assert policy.delay(1, rng, retry_after_s=3600.0) == 30.0
    clock = Clock()
    backoff = Backoff(policy, rng, clock)
    assert backoff.fail(retry_after_s=7.5) == 7.5
    assert backoff.next_at == clock.now + 7.5 and not backoff.due()
    assert backoff.remaining_s() == 7.5
    clock.now += 7.5
    assert backoff.due() and backoff.remaining_s() == 0.0


def test_a_streak_grows_and_a_success_ends_it() -> None:
    policy = RetryPolicy(initial_s=1.0, cap_s=16.0)
    clock = Clock()
    backoff = Backoff(policy, random.Random(2), clock)
    waits = []
    for _ in range(6):
        wait = backoff.fail()
        assert wait is not None
        waits.append(wait)
        clock.now += wait  # tried again as soon as it was due, and failed again
    assert backoff.failures == 6
    assert all(w <= policy.ceiling(n) for n, w in enumerate(waits, 1))
    backoff.succeed()
    assert backoff.failures == 0 and backoff.due()
    wait = backoff.fail()
    assert wait is not None and wait <= policy.initial_s and backoff.failures == 1


def test_a_healthy_period_starts_a_new_streak() -> None:
    policy = RetryPolicy(initial_s=1.0, cap_s=16.0, reset_after_s=60.0)
    clock = Clock()
    backoff = Backoff(policy, random.Random(4), clock)
    for _ in range(4):
        wait = backoff.fail()
        assert wait is not None
        clock.now += wait
    assert backoff.failures == 4
    clock.now += 59.0  # worked for less than the healthy period: the same streak
    backoff.fail()
    assert backoff.failures == 5
    assert backoff.next_at is not None
    clock.now = backoff.next_at + 60.0  # worked for the healthy period: a new one
    backoff.fail()
    assert backoff.failures == 1
    never = Backoff(RetryPolicy(initial_s=1.0, cap_s=2.0, reset_after_s=0), clock=clock)
    never.fail()
    clock.now += 10_000
    never.fail()
    assert never.failures == 2


def test_the_attempt_budget() -> None:
    backoff = Backoff(RetryPolicy(initial_s=0.5, cap_s=5.0, max_attempts=3), random.Random(1))
    assert backoff.fail() is not None and backoff.fail() is not None
    assert backoff.fail() is None and backoff.failures == 3 and backoff.due()
    backoff.reset()
    assert backoff.fail() is not None


def test_the_deadline_budget() -> None:
    clock = Clock()
    backoff = Backoff(RetryPolicy(initial_s=1.0, cap_s=4.0, deadline_s=10.0), random.Random(1),
                      clock)
    assert backoff.fail() is not None  # the streak starts here
    clock.now += 5.0
    assert backoff.fail(retry_after_s=4.0) is not None  # the next try 9 s in: allowed
    clock.now += 4.0
    assert backoff.fail(retry_after_s=4.0) is None  # 13 s in: past the deadline


@pytest.mark.parametrize("kwargs", [{"initial_s": 0}, {"initial_s": 2, "cap_s": 1},
                                    {"multiplier": 0.5}, {"max_attempts": -1},
                                    {"deadline_s": -1}, {"reset_after_s": -1}])
def test_a_policy_that_makes_no_sense_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_retry_after_in_both_forms() -> None:
    now = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Fri, 15 Jan 2027 08:00:42 GMT", now) == 42.0
    assert parse_retry_after("Fri, 15 Jan 2027 07:59:00 GMT", now) == 0.0  # already past
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None and parse_retry_after(None) is None
