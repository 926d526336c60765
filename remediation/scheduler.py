"""The heartbeat: remediation's periodic work, one thread per job, woken early when event time
moves, never two runs of one job at once.

Jobs: flush alert groups whose ``group_wait``/``group_interval``/``repeat_interval`` has come
(notifications and Alertmanager re-sends), advance the runbooks (drain step timeouts, traffic
checks, soaks, approval expiry, deferred proposals), ask the TE controller what it holds drained,
and housekeeping (expired silences). The heartbeat only decides *when to look*; *what is due* is
decided on event time (:mod:`remediation.clock`), which is how the same configuration behaves in
a live fabric and in a scenario compressed twenty-fold.

*When to look*: every ``seconds`` of wall time (so timers still fire while no data arrives), and
at once whenever :meth:`Heartbeat.wake` says event time moved or work arrived. A job's thread
runs it to the end before it looks again: a slow run (a switch answering a gNMI Set in its last
second) delays its own next run, never stacks a second one beside it, and wakes that came
meanwhile are one run right after it, so nothing is skipped and nothing piles up. This replaces
APScheduler's fixed-rate interval jobs, which logged "maximum number of running instances
reached" and skipped the beat whenever a run outlasted the tick, so at ``--speed 20`` a 5 s
(event) timer could wait a whole extra tick per skip.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("rocewatch.remediation.scheduler")


@dataclass
class _Job:
    name: str
    seconds: float
    fn: Callable[[], Any]
    woken: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    runs: int = 0
    errors: int = 0
    longest_s: float = 0.0
    #: runs that began more than one period after they were due (the job could not keep up)
    behind: int = 0


class Heartbeat:
    def __init__(self) -> None:
        self._jobs: dict[str, _Job] = {}
        self._stop = threading.Event()

    def every(self, name: str, seconds: float, job: Callable[[], Any]) -> None:
        """Run ``job`` every ``seconds`` of wall time at most apart, and on :meth:`wake`."""
        if self._stop.is_set() or (name in self._jobs and self._jobs[name].thread):
            raise RuntimeError(f"heartbeat job {name} cannot be added now")
        self._jobs[name] = _Job(name, max(1e-3, seconds), job)

    def wake(self, name: str) -> None:
        """Run the job as soon as its thread is free (wakes coalesce)."""
        job = self._jobs.get(name)
        if job is not None:
            job.woken.set()

    def start(self) -> None:
        for job in self._jobs.values():
            if job.thread is None:
                job.thread = threading.Thread(target=self._loop, args=(job,), daemon=True,
                                              name=f"rw-heartbeat-{job.name}")
                job.thread.start()

    def _loop(self, job: _Job) -> None:
        due = time.monotonic() + job.seconds
        while not self._stop.is_set():
            job.woken.wait(max(0.0, due - time.monotonic()))
            if self._stop.is_set():
                return
            job.woken.clear()
            started = time.monotonic()
            if started - due > job.seconds:
                job.behind += 1
            try:
                job.fn()
            except Exception:  # a job's bug must not stop the heartbeat: log, count, go on
                job.errors += 1
                log.exception("remediation job %s failed", job.name)
            finally:
                job.runs += 1
                job.longest_s = max(job.longest_s, time.monotonic() - started)
            due = started + job.seconds

    def stop(self) -> None:
        self._stop.set()
        for job in self._jobs.values():
            job.woken.set()
        for job in self._jobs.values():
            if job.thread is not None and job.thread is not threading.current_thread():
                job.thread.join(30)

    @property
    def runs(self) -> dict[str, int]:
        return {j.name: j.runs for j in self._jobs.values()}

    @property
    def errors(self) -> dict[str, int]:
        return {j.name: j.errors for j in self._jobs.values() if j.errors}

    def stats(self) -> dict[str, dict[str, float]]:
        """Per job: runs, errors, the longest run (s), runs that began a period late."""
        return {j.name: {"runs": j.runs, "errors": j.errors,
                         "longest_s": round(j.longest_s, 4), "behind": j.behind}
                for j in self._jobs.values()}
