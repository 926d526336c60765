"""Runbooks for people, one Markdown file per alert kind (``<kind>.md``): what it means, what the
automation does, what a human does. Alerts link to theirs in the ``runbook`` annotation."""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).parent


def kinds() -> frozenset[str]:
    """The alert kinds that have a runbook."""
    return frozenset(p.stem for p in DIR.glob("*.md"))
