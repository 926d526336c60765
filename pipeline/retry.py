"""The one retry policy, and the state of one thing retried under it.

:class:`RetryPolicy` is pure: given how many failures came in a row and a random source, it says
how long to wait. The wait grows from ``initial_s`` by ``multiplier`` up to ``cap_s``, with full
jitter (uniform over [0, that ceiling]) so that a fabric-wide outage does not come back as a
thundering herd. A server's ``Retry-After`` is honoured (the wait is at least that long), up to
the cap. The budget is optional: at most ``max_attempts`` tries, no try later than ``deadline_s``
after the first failure of a streak.

:class:`Backoff` is one retrier's streak: how many failures in a row, and when the next try is
due. A success ends the streak, and so does a healthy period: a failure that comes
``reset_after_s`` or more after the try it follows was due starts a new streak (the thing worked
in between). It reads time from an injected clock and never sleeps. A caller that may block waits
the delay on its stop :class:`threading.Event` (``stop.wait(delay)``), never in ``time.sleep``, so
a stop ends the wait at once; a caller that must not block (the TE client, on the runbook job's
thread) asks :meth:`Backoff.due` and tries again on a later call.

:func:`parse_retry_after` reads the HTTP header in both its forms.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pipeline.errors import ConfigError

Clock = Callable[[], float]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, a cap, ``Retry-After``, a reset and a budget."""

    initial_s: float = 0.5
    cap_s: float = 30.0
    multiplier: float = 2.0
    #: a failure this long after the try it follows was due starts a new streak (0: never)
    reset_after_s: float = 60.0
    #: give up after this many failed tries in a row (0: never)
    max_attempts: int = 0
    #: give up rather than try later than this after a streak's first failure (0: never)
    deadline_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.initial_s > 0:
            raise ConfigError(f"a retry's initial delay must be positive, not {self.initial_s}")
        if not self.cap_s >= self.initial_s:
            raise ConfigError(f"a retry's cap ({self.cap_s}s) must be at least its initial "
                              f"delay ({self.initial_s}s)")
        if not self.multiplier >= 1:
            raise ConfigError(f"a retry's multiplier must be at least 1, not {self.multiplier}")
        if self.reset_after_s < 0 or self.deadline_s < 0 or self.max_attempts < 0:
            raise ConfigError("a retry's reset, deadline and attempts cannot be negative")

    def ceiling(self, failures: int) -> float:
        """The longest wait after the ``failures``-th failure in a row (the first: initial)."""
        if failures < 1:
            raise ValueError(f"failures counts from 1, not {failures}")
        try:
            grown = self.initial_s * self.multiplier ** (failures - 1)
        except OverflowError:  # a very long streak: long past the cap
            return self.cap_s
        return min(self.cap_s, grown)

    def delay(self, failures: int, rng: random.Random,
              retry_after_s: float | None = None) -> float:
        """The wait after the ``failures``-th failure in a row: uniform over [0, ceiling], at
        least the server's ``Retry-After`` when it sent one, never more than the cap."""
        wait = rng.uniform(0.0, self.ceiling(failures))
        if retry_after_s is not None:
            wait = max(wait, retry_after_s)
        return min(wait, self.cap_s)


#: polling a bus that failed: its client reconnects by itself, so look again soon
REPOLL = RetryPolicy(initial_s=0.5, cap_s=5.0)


class Backoff:
    """One retrier's streak under a policy (see the module docstring); one per retrier, not
    shared between threads."""

    def __init__(self, policy: RetryPolicy, rng: random.Random | None = None,
                 clock: Clock = time.monotonic) -> None:
        self.policy = policy
        self._rng = rng or random.Random()
        self._clock = clock
        #: failed tries in the current streak
        self.failures = 0
        #: when (on the clock) the next try is due; None outside a streak or once given up
        self.next_at: float | None = None
        self._due_at: float | None = None  # when the last retry was due (for the reset)
        self._since = 0.0

    def fail(self, retry_after_s: float | None = None) -> float | None:
        """Count a failure; the delay before the next try, or None when the budget is spent
        (the streak is kept, so ``failures`` says how many; :meth:`reset` to start over)."""
        now = self._clock()
        p = self.policy
        if self._due_at is not None and p.reset_after_s and now - self._due_at >= p.reset_after_s:
            self.reset()  # it worked for a healthy period since the last retry
        if not self.failures:
            self._since = now
        self.failures += 1
        self.next_at = None
        if p.max_attempts and self.failures >= p.max_attempts:
            return None
        wait = p.delay(self.failures, self._rng, retry_after_s)
        if p.deadline_s and now + wait > self._since + p.deadline_s:
            return None
        self.next_at = self._due_at = now + wait
        return wait

    def succeed(self) -> None:
        """The try worked: the streak is over."""
        self.reset()

    def reset(self) -> None:
        self.failures = 0
        self.next_at = self._due_at = None

    def due(self) -> bool:
        """True when a try may be made now (no streak, or its wait is over)."""
        return self.next_at is None or self._clock() >= self.next_at

    def remaining_s(self) -> float:
        """How long until the next try is due (0 when it is)."""
        return 0.0 if self.next_at is None else max(0.0, self.next_at - self._clock())


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110
    10.2.3); None when absent or unreadable, 0 for a date already past."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())
