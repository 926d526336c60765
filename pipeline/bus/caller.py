"""One call at a time on a daemon thread of its own, waited for with a deadline.

A Kafka consumer's poll runs here (see :mod:`pipeline.bus.kafka`): a call that never returns is
given up by its waiter, and the thread it is stuck on never holds the process at exit, as a
``ThreadPoolExecutor`` worker would (Python joins those at interpreter exit)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple["Future[Any]", Callable[..., Any], dict[str, Any]]


class DaemonCaller:
    """Runs submitted calls in order on one daemon thread; :meth:`shutdown` ends it after the
    call it is in (a stuck one is left to the daemon thread: it ends with the process)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        self._jobs.put((done, fn, kwargs))
        return done

    def shutdown(self) -> None:
        self._jobs.put(None)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            done, fn, kwargs = job
            if not done.set_running_or_notify_cancel():
                continue
            try:
                done.set_result(fn(**kwargs))
            except BaseException as exc:  # handed to the waiter, who raises it
                done.set_exception(exc)
