"""The one supervisor: a loop in a thread of its own, restarted under the retry policy when it
crashes.

The front door runs each role's loop under one (:mod:`rocewatch.app`), and the collect role each
collector instance (:mod:`collectors.loop`). A crash is logged, a
:class:`~pipeline.errors.RocewatchError` as one line (it says what was wrong), anything else with
its traceback (a bug), and the loop is started again after the policy's delay, waited on the stop
event so that a stop ends the wait at once. A loop that returns is done; so is one whose policy's
budget runs out.

Health: alive, restarts, the last error, how many crashes in a row came without progress, and
whether the loop is crash-looping. Progress is what the ``progress`` probe says (its value changed
while the loop ran: messages stored, batches sent) or, without a probe, that the loop ran for the
policy's ``reset_after_s``. A loop that crashes again and again on the same input makes no
progress, so the count grows; at ``crash_loop_after`` crashes in a row it is *crash-looping*,
which its health says (and the front door's watchdog turns into an alert and a metric:
:mod:`rocewatch.watchdog`) until it makes progress again, seen at its next crash or, while it
runs, by :meth:`Supervisor.check`. Progress also ends the backoff streak, so a loop that was doing
well comes back quickly.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pipeline.errors import RocewatchError
from pipeline.retry import Backoff, Clock, RetryPolicy

log = logging.getLogger("rocewatch")

#: restarting a crashed loop: soon at first, at most every 30 s; a minute of work starts over
RESTART = RetryPolicy(initial_s=1.0, cap_s=30.0, reset_after_s=60.0)
#: crashes in a row without progress that make a loop crash-looping (reported, never silent)
CRASH_LOOP_AFTER = 3

Loop = Callable[[threading.Event], None]

_NO_READING = object()


class Supervisor:
    """Runs ``loop(stop)`` in a thread until it returns or ``stop`` is set (module docstring)."""

    def __init__(self, name: str, loop: Loop, stop: threading.Event, *,
                 policy: RetryPolicy = RESTART, progress: Callable[[], object] | None = None,
                 logger: logging.Logger | None = None, thread_name: str = "",
                 rng: random.Random | None = None, clock: Clock = time.monotonic,
                 crash_loop_after: int = CRASH_LOOP_AFTER) -> None:
        self.name = name
        self.policy = policy
        self._loop = loop
        self._stop = stop
        self._progress = progress
        self._log = logger or log
        self._clock = clock
        self._backoff = Backoff(policy, rng, clock)
        #: crashes so far (each one is followed by a restart unless stopped or out of budget)
        self.restarts = 0
        self.last_error = ""
        #: crashes in a row that came without progress
        self.stalled = 0
        self.crash_loop_after = max(1, crash_loop_after)
        self._lock = threading.Lock()
        # the progress reading and the clock when the current run started
        self._run_before: object = _NO_READING
        self._run_started: float | None = None
        self.thread = threading.Thread(target=self._supervise, daemon=True,
                                       name=thread_name or f"rocewatch-{name}")

    def start(self) -> Supervisor:
        self.thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end (set the stop event first); True once it has, or if it
        never started."""
        if self.thread.ident is None:
            return True
        self.thread.join(timeout)
        return not self.thread.is_alive()

    @property
    def crash_looping(self) -> bool:
        """The loop crashed ``crash_loop_after`` times in a row without progress."""
        return self.stalled >= self.crash_loop_after

    def check(self) -> bool:
        """See whether the running loop has made progress since it last started (its probe
        moved, or, without one, it has run for ``reset_after_s``): then its crashes without
        progress are over. Returns :attr:`crash_looping`."""
        with self._lock:
            if self.stalled and self.alive and self._run_started is not None:
                if self._progress is not None:
                    now = self._reading()
                    progressed = now is not _NO_READING and now != self._run_before
                else:
                    progressed = self._clock() - self._run_started >= self.policy.reset_after_s
                if progressed:
                    self.stalled = 0
                    self._log.warning("%s makes progress again", self.name)
            return self.crash_looping

    def health(self) -> dict[str, Any]:
        looping = self.check()
        return {"alive": self.alive, "restarts": self.restarts, "last_error": self.last_error,
                "crashes_without_progress": self.stalled, "crash_looping": looping}

    def _reading(self) -> object:
        if self._progress is None:
            return _NO_READING
        try:
            return self._progress()
        except Exception:  # a broken probe must not end supervision: it shows no progress
            self._log.debug("%s: the progress probe failed", self.name, exc_info=True)
            return _NO_READING

    def _supervise(self) -> None:
        while not self._stop.is_set():
            before, started = self._reading(), self._clock()
            with self._lock:
                self._run_before, self._run_started = before, started
            try:
                self._loop(self._stop)
                return
            except Exception as exc:  # the supervisor boundary: log, back off, restart
                delay = self._crashed(exc, before, started)
                if delay is None:
                    return
            if self._stop.wait(delay):
                return

    def _crashed(self, exc: Exception, before: object, started: float) -> float | None:
        """Count and log a crash (from inside its ``except``); the delay before the restart,
        or None when the policy's budget is spent."""
        with self._lock:
            self.restarts += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self._progress is not None:
                after = self._reading()
                progressed = after is not _NO_READING and after != before
            else:
                progressed = self._clock() - started >= self.policy.reset_after_s
            if progressed:
                self.stalled = 0
                self._backoff.succeed()
            else:
                self.stalled += 1
            self._run_started = None
        delay = self._backoff.fail()
        then = "giving up" if delay is None else f"restarting in {delay:.1f}s"
        stalled = (f", {self.stalled} crash(es) in a row without progress"
                   if self.stalled > 1 else "")
        if self.stalled == self.crash_loop_after:
            stalled += ": crash-looping"
        if isinstance(exc, RocewatchError):
            self._log.error("%s failed: %s (%s%s)", self.name, exc, then, stalled)
        else:
            self._log.exception("%s crashed (%s%s)", self.name, then, stalled)
        return delay
