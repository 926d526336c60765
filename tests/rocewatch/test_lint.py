"""The code stays as clean as pyproject.toml says: ruff and mypy (strict) run in the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PACKAGES = ["rocewatch", "collectors", "pipeline", "detectors", "remediation", "ui", "lab"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_ruff_is_clean() -> None:
    done = run(str(BIN / "ruff"), "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean() -> None:
    done = run(str(BIN / "mypy"), *PACKAGES)
    assert done.returncode == 0, done.stdout + done.stderr
