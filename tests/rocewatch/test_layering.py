"""The layout tells the data flow: imports only point down, stages never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("collectors", "detectors", "remediation", "ui")
PACKAGES = ("rocewatch", "lab", "pipeline", *STAGES)
# what each package may import from the project
ALLOWED: dict[str, set[str]] = {
    "pipeline": {"pipeline"},
    **{stage: {stage, "pipeline"} for stage in STAGES},
    "lab": {"lab", "pipeline.topology.model", "pipeline.errors", "pipeline.metrics",
            "pipeline.kinds"},
    "rocewatch": set(PACKAGES),
}


def project_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found.extend((node.lineno, n) for n in names if n.split(".")[0] in PACKAGES)
    return found


def allowed(package: str, module: str) -> bool:
    return any(module == a or module.startswith(a + ".") for a in ALLOWED[package])


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_down(package: str) -> None:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in project_imports(path):
            if not allowed(package, module):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "layering broken:\n" + "\n".join(bad)


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nfrom detectors.loop import run\nimport pipeline.model\n")
    modules = [m for _, m in project_imports(probe)]
    assert modules == ["detectors.loop", "pipeline.model"]
    assert not allowed("pipeline", "detectors.loop")
    assert allowed("detectors", "pipeline.model")
    assert not allowed("ui", "remediation.drains.runbook")
