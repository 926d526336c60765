"""``docs/bus-encoding.md`` cannot drift from the code: its metric-code table is generated from the
catalog (run this module with python to regenerate it), and its field tables list exactly the
fields of the models each topic carries."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from pipeline.metrics import CATALOG, Metric
from pipeline.model import ActionResult, Alert
from pipeline.topology.neighbors import LocalPort, NeighborReport, RemoteEnd
from pipeline.wire import commands
from pipeline.wire.deadletter import DeadLetter

DOC = Path(__file__).resolve().parents[3] / "docs" / "bus-encoding.md"
BEGIN = re.compile(r"^<!-- BEGIN metric codes.*?-->\n", re.M | re.S)
END = "<!-- END metric codes -->"
QUALIFIERS = {None: "-1 (none)", "priority": "PFC priority (0-7)",
              "queue": "egress queue index (from 0)"}


def _qual(metric: Metric) -> str:
    return QUALIFIERS[metric.qualifier]


def metric_table() -> str:
    """The table of every metric code, from the catalog."""
    rows = ["| code | name | kind | unit | qual | meaning |", "|---:|---|---|---|---|---|"]
    rows += [f"| {code} | `{m.name}` | {m.kind.value} | {m.unit} | {_qual(m)} | {m.help} |"
             for code, m in enumerate(CATALOG)]
    return "\n".join(rows) + "\n"


def _generated(text: str) -> tuple[int, int]:
    begin = BEGIN.search(text)
    assert begin is not None, f"{DOC.name} has no BEGIN metric codes marker"
    end = text.index(END, begin.end())
    return begin.end(), end


def test_the_metric_table_is_the_catalog() -> None:
    text = DOC.read_text()
    start, end = _generated(text)
    assert text[start:end] == metric_table(), (
        f"{DOC.name}'s metric table is not the catalog's: run "
        "`.venv/bin/python -m tests.pipeline.wire.test_bus_doc` to regenerate it")


def test_every_qualifier_of_the_catalog_is_explained() -> None:
    assert {m.qualifier for m in CATALOG} <= set(QUALIFIERS)


def table_after(heading: str) -> list[list[str]]:
    """The cells of the first table under ``heading`` (header and rule left out)."""
    text = DOC.read_text()
    at = text.index(f"\n{heading}\n")
    rows: list[list[str]] = []
    for line in text[at:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def names(rows: list[list[str]]) -> set[str]:
    return {row[0].strip("`") for row in rows}


@pytest.mark.parametrize("heading, model", [
    ("## Alerts", Alert), ("## Actions", ActionResult), ("## Dead letters", DeadLetter),
    ("## Neighbors", NeighborReport), ("Each port:", LocalPort), ("Each neighbour:", RemoteEnd)])
def test_each_field_table_lists_the_model_fields(heading: str, model: type[BaseModel]) -> None:
    assert names(table_after(heading)) == set(model.model_fields)


def test_the_command_table_lists_each_kind_and_its_fields() -> None:
    kinds: dict[str, type[BaseModel]] = {
        m.model_fields["kind"].default: m for m in (
            commands.Approve, commands.Reject, commands.Repair, commands.Silence,
            commands.ExpireSilence, commands.Resume)}
    documented: dict[str, set[str]] = {kind: set() for kind in kinds}
    for row in table_after("## Commands"):
        field, where = row[0].strip("`"), row[2]
        for kind in (kinds if where == "all" else [k.strip() for k in where.split(",")]):
            documented[kind].add(field)
    assert documented == {kind: set(model.model_fields) for kind, model in kinds.items()}


def main() -> None:
    """Rewrite the generated table in place."""
    text = DOC.read_text()
    start, end = _generated(text)
    DOC.write_text(text[:start] + metric_table() + text[end:])
    print(f"wrote {len(CATALOG)} metric codes to {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
