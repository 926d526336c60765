"""``rocewatch bench ...``: benchmarks that print numbers (never timed assertions).

Each benchmark lives beside what it measures and is mounted here by name.
"""

from __future__ import annotations

import importlib

import click

#: benchmark → "module:attribute" of its click command
BENCHMARKS: dict[str, str] = {
    "ingest": "rocewatch.bench.ingest:ingest",
    "collect": "rocewatch.bench.collect:collect",
    "dashboard": "rocewatch.bench.dashboard:dashboard",
    "detect": "rocewatch.bench.detect:detect",
    "fabric": "rocewatch.bench.fabric:fabric",
    "lab": "rocewatch.cli.lab:bench",
    "query": "rocewatch.bench.query:query",
    "remediate": "rocewatch.bench.remediate:remediate",
}


class _Benchmarks(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(BENCHMARKS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in BENCHMARKS:
            return None
        module, _, attr = BENCHMARKS[name].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(cls=_Benchmarks)
def bench() -> None:
    """Benchmarks: each prints what it measured and how."""
