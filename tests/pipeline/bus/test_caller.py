"""The bus's daemon caller: calls run in order, errors reach the waiter, and a call that never
returns holds neither its waiter past the deadline nor the process at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import pytest

from pipeline.bus.caller import DaemonCaller

ROOT = Path(__file__).resolve().parents[3]


def test_calls_run_in_order_and_their_errors_reach_the_waiter() -> None:
    caller = DaemonCaller("t")
    seen: list[int] = []

    def note(n: int) -> int:
        seen.append(n)
        return n

    first, second = caller.submit(note, n=1), caller.submit(note, n=2)
    assert (first.result(5), second.result(5)) == (1, 2) and seen == [1, 2]

    def fail() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        caller.submit(fail).result(5)
    assert caller.thread.daemon
    caller.shutdown()
    caller.thread.join(5)
    assert not caller.thread.is_alive()


def test_a_stuck_call_is_given_up_by_its_waiter() -> None:
    caller = DaemonCaller("t")
    release = threading.Event()
    with pytest.raises(FutureTimeout):
        caller.submit(release.wait).result(0.2)
    release.set()
    caller.shutdown()


def test_a_stuck_call_does_not_hold_the_process_at_exit() -> None:
    script = textwrap.dedent("""
        import threading
        from pipeline.bus.caller import DaemonCaller
        caller = DaemonCaller("stuck")
        caller.submit(threading.Event().wait)  # never returns
        caller.shutdown()
        print("done", flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
