"""The meters of :mod:`tests.pipeline.ingest_store_bench`: cProfile of chosen methods, the CPU
of each kind of thread, of each kind of store statement, and the engine's own counters."""

from __future__ import annotations

import cProfile
import os
import pstats
import threading
import time
from typing import Any

from rocewatch.bench.fabric_meter import task_cpu


class Profiles:
    """cProfile of chosen methods, one profile per thread, merged at the end."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def wrap(self, owner: Any, name: str) -> None:
        inner = getattr(owner, name)

        def profiled(*args: Any, **kwargs: Any) -> Any:
            prof: cProfile.Profile | None = getattr(self._local, "prof", None)
            if prof is None:
                prof = self._local.prof = cProfile.Profile()
                with self._lock:
                    self._all.append(prof)
            prof.enable()
            try:
                return inner(*args, **kwargs)
            finally:
                prof.disable()
        setattr(owner, name, profiled)

    def dump(self, path: str) -> None:
        stats = pstats.Stats(*self._all) if self._all else None
        if stats is not None:
            stats.dump_stats(path)
            stats.sort_stats("tottime").print_stats(25)


class Statements:
    """The process CPU spent while each kind of store statement ran (chDB runs one at a time, so
    this is the statement's own work plus whatever ran beside it: merges, the ingest loop)."""

    KINDS = (("INSERT INTO {db}.samples_1m", "roll 1m"), ("INSERT INTO {db}.samples_1h", "roll 1h"),
             ("INSERT INTO {db}.rollup_marks", "insert marks"),
             ("INSERT INTO {db}.rollup_state", "insert rollup state"),
             ("INSERT INTO {db}.samples", "insert samples"), ("SELECT", "job reads"))

    def __init__(self, database: str) -> None:
        self.kinds = tuple((prefix.format(db=database), kind) for prefix, kind in self.KINDS)
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def kind(self, sql: str) -> str:
        return next((k for prefix, k in self.kinds if sql.startswith(prefix)), "other")

    def count(self, kind: str, cpu: float) -> None:
        with self._lock:
            self.cpu[kind] = self.cpu.get(kind, 0.0) + cpu
            self.calls[kind] = self.calls.get(kind, 0) + 1

    def since(self, before: dict[str, float]) -> dict[str, float]:
        with self._lock:
            return {k: v - before.get(k, 0.0) for k, v in self.cpu.items()}


class MeteredConnection:
    """A chDB connection whose statements are counted in :class:`Statements` (installed in the
    store after it opened: the store's lock is held around every call, so nothing overlaps)."""

    def __init__(self, inner: Any, statements: Statements) -> None:
        self._inner = inner
        self._statements = statements

    def query(self, sql: str, *args: Any) -> Any:
        t0 = time.process_time()
        try:
            return self._inner.query(sql, *args)
        finally:
            self._statements.count(self._statements.kind(sql), time.process_time() - t0)

    def send_insert(self, sql: str, fmt: str) -> Any:
        return MeteredInsert(self._inner.send_insert(sql, fmt), self._statements,
                             self._statements.kind(sql))

    def close(self) -> None:
        self._inner.close()


class MeteredInsert:
    """A streaming insert of a :class:`MeteredConnection`."""

    def __init__(self, inner: Any, statements: Statements, kind: str) -> None:
        self._inner = inner
        self._statements = statements
        self._kind = kind
        self._t0 = time.process_time()

    def __enter__(self) -> MeteredInsert:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)
        self._statements.count(self._kind, time.process_time() - self._t0)

    def append(self, data: bytes) -> None:
        self._inner.append(data)

    def finish(self) -> Any:
        return self._inner.finish()


def thread_groups() -> dict[str, float]:
    """CPU seconds of this process's threads, by kind: the Python name's prefix, else the OS
    name (chDB's engine threads name themselves)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id}
    out: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        got = task_cpu(tid)
        if got is None:
            continue
        comm, cpu = got
        name = names.get(int(tid), "")
        kind = (name.rstrip("0123456789_").rstrip("-") if name
                else f"chdb:{comm.rstrip('0123456789')}")
        out[kind] = out.get(kind, 0.0) + cpu
    return out


#: the engine's counters printed for the window: what was inserted, merged, read
EVENTS = ("InsertQuery", "InsertedRows", "SelectQuery", "SelectedRows", "Merge", "MergedRows",
          "MergeTotalMilliseconds")


def events(store: Any) -> dict[str, int]:
    """The engine's cumulative counters (:data:`EVENTS`)."""
    names = ", ".join(f"'{e}'" for e in EVENTS)
    got = store.query(f"SELECT event, value FROM system.events WHERE event IN ({names})")
    return {str(e): int(v) for e, v in zip(got["event"], got["value"], strict=True)}
