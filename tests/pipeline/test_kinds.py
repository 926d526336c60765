"""The names the platform speaks live once, in :mod:`pipeline.kinds`, and cover the format."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline import kinds
from pipeline.kinds import (
    FAULT_KINDS,
    FAULT_TO_INCIDENT,
    FORMAT_FAULT_KINDS,
    INCIDENT_KINDS,
    RUNBOOK_ACTION_NAMES,
    SYMPTOMS,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("collectors", "detectors", "remediation", "ui", "rocewatch", "lab", "pipeline")
NAMES = frozenset({*FAULT_KINDS, *INCIDENT_KINDS, *SYMPTOMS})
#: the same spelling meaning something else: the scenario format's ``incast`` traffic pattern
OTHER_MEANINGS = {("lab/scenario/spec.py", "incast"), ("lab/traffic.py", "incast")}


def literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in NAMES]


def test_no_kind_is_spelled_outside_the_names_module() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "pipeline/kinds.py":
                continue
            found += [f"{rel}:{line} spells {value!r}" for line, value in literals(path)
                      if (rel, value) not in OTHER_MEANINGS]
    assert not found, "import these from pipeline.kinds:\n" + "\n".join(found)


def test_the_checker_sees_a_spelled_kind(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('"""Mentions faulty_link in prose."""\nKIND = "faulty_link"\n')
    assert literals(probe) == [(2, "faulty_link")]


def _fault_table(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\| `(\w+)` \|.*\| `(\w+)` on ", text, re.M))


def test_every_fault_kind_of_the_format_maps_to_an_incident() -> None:
    readme = ROOT.parent / "shared" / "scenarios" / "README.md"
    # the lab's own kinds are documented in docs/lab.md, "Topology faults", in the same table
    lab = (ROOT / "docs" / "lab.md").read_text()
    own = _fault_table(lab[lab.index("### Topology faults"):])
    assert own and set(own) == set(FAULT_KINDS) - set(FORMAT_FAULT_KINDS)
    if readme.exists():  # the shared guide beside the checkout: its fault table, row by row
        table = _fault_table(readme.read_text())
        assert tuple(table) == FORMAT_FAULT_KINDS
        assert {**table, **own} == FAULT_TO_INCIDENT
    assert {k: FAULT_TO_INCIDENT[k] for k in own} == own
    assert set(FAULT_TO_INCIDENT.values()) <= set(INCIDENT_KINDS)
    assert tuple(FAULT_TO_INCIDENT) == FAULT_KINDS


def test_each_name_is_one_constant() -> None:
    constants = {k: v for k, v in vars(kinds).items() if k.isupper() and isinstance(v, str)}
    # runbook actions are named here too, but "drain" also means other things (a TE request, a
    # command), so only the vocabularies above are checked for spellings elsewhere
    assert set(constants.values()) == NAMES | set(RUNBOOK_ACTION_NAMES)
    # a fault and the incident it produces may share a spelling; nothing else may
    spelled: dict[str, list[str]] = {}
    for name, value in constants.items():
        spelled.setdefault(value, []).append(name)
    for value, names in spelled.items():
        assert len(names) == 1 or sorted(names) == sorted([f"FAULT_{names[-1]}",
                                                           names[-1]]), (value, names)
