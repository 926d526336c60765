"""Tests import our own packages normally: a broken import of our code fails, it never skips.

``pytest.importorskip("lab.runtime")`` (or a ``try: import ... except ImportError``) turns a
``lab`` that no longer imports into a skipped test, in CI as much as anywhere; third-party
optional dependencies may still be skipped that way.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = frozenset({"rocewatch", "collectors", "pipeline", "detectors", "remediation", "ui", "lab",
                  "tests"})


def _ours(module: str) -> bool:
    return module.partition(".")[0] in OURS


def _imports(nodes: list[ast.stmt]) -> list[str]:
    found: list[str] = []
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                found += [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                found.append(sub.module)
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
               for n in names)


def soft_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of our code that a test turns into a skip or a fallback."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
                else ""
            if name == "importorskip" and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and _ours(node.args[0].value):
                out.append((node.lineno, node.args[0].value))
        elif isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            out += [(node.lineno, m) for m in _imports(node.body) if _ours(m)]
    return sorted(out)


def test_no_test_skips_on_a_broken_import_of_our_code() -> None:
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module} softly"
           for path in sorted((ROOT / "tests").rglob("*.py"))
           for line, module in soft_imports(path)]
    assert not bad, "import our modules normally:\n" + "\n".join(bad)


def test_the_checker_sees_both_forms(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pytest\n"
        "np = pytest.importorskip('numpy')\n"
        "rt = pytest.importorskip('lab.runtime')\n"
        "try:\n    from detectors.kinds import X\nexcept ImportError:\n    X = ()\n"
        "try:\n    import yaml\nexcept ModuleNotFoundError:\n    yaml = None\n")
    assert soft_imports(probe) == [(3, "lab.runtime"), (4, "detectors.kinds")]
