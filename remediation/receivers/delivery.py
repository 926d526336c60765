"""Delivering notifications: retries under the retry policy (:mod:`pipeline.retry`), off the
dispatcher's path, and one audit record per notification with every attempt in its steps.

Deliveries run on small thread pools so a slow or failing receiver never holds the lifecycle up;
the notifications of one group to one receiver are delivered in order (a resolve never overtakes
the trigger it resolves, even while the trigger is being retried). Incidents have a lane of their
own: a group whose first notification holds a root cause is delivered by the incident pool, so a
storm's hundreds of symptom notices (``notify: all``) never queue in front of its page. A
delivery that fails for good tells the dispatcher to forget it, so the next flush tries again (as
Alertmanager's notification log does).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pipeline.errors import RocewatchError
from pipeline.model import ActionResult
from pipeline.retry import Backoff
from remediation.alerting.notification import Notification
from remediation.audit import Recorder
from remediation.receivers.base import DeliveryError, Receiver

log = logging.getLogger("rocewatch.remediation.delivery")

OnFailed = Callable[[Notification], None]


class Deliverer:
    def __init__(self, receivers: Mapping[str, Receiver], recorder: Recorder,
                 on_failed: OnFailed | None = None, workers: int = 4,
                 stop: threading.Event | None = None, sleep: Callable[[float], Any] | None = None,
                 seed: int | None = None) -> None:
        self.receivers = dict(receivers)
        self.recorder = recorder
        self.on_failed = on_failed
        self._stop = stop or threading.Event()
        self._sleep = sleep or self._stop.wait
        self._rng = random.Random(seed)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rw-deliver")
        self._incidents = ThreadPoolExecutor(max_workers=max(1, workers // 2),
                                             thread_name_prefix="rw-deliver-incident")
        self._futures: set[Future[ActionResult]] = set()
        self._last: dict[tuple[str, str], Future[ActionResult]] = {}
        #: (receiver, group) → its lane, chosen by its first notification, kept while it lives
        self._lane: dict[tuple[str, str], ThreadPoolExecutor] = {}
        self._lock = threading.Lock()

    def submit(self, notification: Notification) -> Future[ActionResult]:
        key = (notification.receiver, notification.group_key)
        with self._lock:
            lane = self._lane.get(key)
            if lane is None:
                incident = any(a.root_cause for a in notification.alerts)
                lane = self._lane[key] = self._incidents if incident else self._pool
            # a pool takes tasks in order, so the one waited for has always started first
            future = lane.submit(self._after, self._last.get(key), notification)
            self._last[key] = future
            self._futures.add(future)
        future.add_done_callback(lambda f: self._done(key, f))
        return future

    def _after(self, previous: Future[ActionResult] | None,
               notification: Notification) -> ActionResult:
        if previous is not None:
            previous.exception()  # wait for it; its outcome is its own record
        return self.deliver(notification)

    def _done(self, key: tuple[str, str], future: Future[ActionResult]) -> None:
        with self._lock:
            self._futures.discard(future)
            if self._last.get(key) is future:
                del self._last[key]
                self._lane.pop(key, None)

    def drain(self, timeout_s: float = 30.0) -> None:
        """Wait for deliveries in flight (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                pending = list(self._futures)
            if not pending:
                return
            pending[0].exception(timeout=max(0.0, deadline - time.monotonic()))
            if time.monotonic() > deadline:
                return

    def deliver(self, notification: Notification) -> ActionResult:
        """Send with retries; record and return the audit record."""
        receiver = self.receivers[notification.receiver]
        opts = receiver.options
        steps: list[dict[str, Any]] = []
        outcome, detail = "failed", ""
        backoff = Backoff(opts.policy, self._rng)
        while True:
            attempt = backoff.failures + 1
            started = time.monotonic()
            try:
                detail = receiver.send(notification)
                steps.append({"step": "send", "attempt": attempt, "outcome": "done",
                              "ms": round((time.monotonic() - started) * 1000, 1)})
                outcome = "done"
                break
            except DeliveryError as exc:
                steps.append({"step": "send", "attempt": attempt, "outcome": "failed",
                              "status": exc.status, "error": str(exc)[:300]})
                detail = str(exc)
                if not exc.retryable or self._stop.is_set():
                    break
                wait = backoff.fail(exc.retry_after_s)
                if wait is None:  # the attempts are spent
                    break
                self._sleep(wait)
            except RocewatchError as exc:  # a receiver bug surfaced as our error: no retry
                steps.append({"step": "send", "attempt": attempt, "outcome": "failed",
                              "error": str(exc)[:300]})
                detail = str(exc)
                break
        result = ActionResult(
            action="notify", target=notification.receiver,
            alert_fingerprint=",".join(notification.fingerprints),
            alert_name=notification.group_labels.get("alertname", ""),
            mode="auto",  # notifications always go out; modes govern runbooks
            outcome=outcome,
            detail=(f"{notification.status} {notification.reason} "
                    f"{len(notification.alerts)} alert(s) group {notification.group_key}: "
                    f"{detail}")[:1000],
            steps=tuple(steps), at_ns=notification.at_ns)
        self.recorder.record(result)
        if outcome != "done":
            log.warning("notification to %s failed after %d attempt(s): %s",
                        notification.receiver, len(steps), detail)
            if self.on_failed is not None:
                self.on_failed(notification)
        return result

    def close(self) -> None:
        self._stop.set()
        self._incidents.shutdown(wait=True, cancel_futures=False)
        self._pool.shutdown(wait=True, cancel_futures=False)
        for receiver in self.receivers.values():
            receiver.close()
