"""RFC 7951 JSON trees for Get responses on container paths.

A Get with JSON or JSON_IETF encoding on a container returns the subtree as one JSON value, the way
EOS or SR Linux do: lists become arrays of entries carrying their key leaves, and members directly
under a top-level container are qualified with their module name
(``{"openconfig-interfaces:interface": [...]}``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lab.gnmi.leaves import MODULES, Kind, LeafTable
from lab.gnmi.paths import PathT
from lab.gnmi.render import leaf_python_value


def build_tree(table: LeafTable, sel: NDArray[np.int64], base: PathT, snap: NDArray[np.float64],
               epoch_ns: int, ietf: bool) -> Any:
    """The JSON value of ``base`` (a path without wildcards) given the leaves under it."""
    items = []
    for i in sel.tolist():
        kind = int(table.kinds[i])
        idx = int(table.index[i])
        raw = float(snap[idx]) if idx >= 0 else 0.0
        value = leaf_python_value(kind, raw, table.consts[i], epoch_ns)
        if not ietf and kind in (int(Kind.COUNTER), int(Kind.GAUGE), int(Kind.TIMETICKS)):
            value = int(str(value))
        items.append((table.paths[i], value))
    return assemble(base, items)


def assemble(base: PathT, items: Iterable[tuple[PathT, Any]]) -> Any:
    """The JSON value of ``base`` from the leaves under it, each ``(full path, JSON value)``."""
    depth = len(base)
    root: dict[str, Any] = {}
    for path, value in items:
        rest = path[depth:]
        if not rest:
            return value
        node = root
        for name, keys in rest[:-1]:
            if keys:
                entries = node.setdefault(name, {})
                node = entries.setdefault(keys, dict(keys))
            else:
                node = node.setdefault(name, {})
        node[rest[-1][0]] = value
    tree = _lists(root)
    module = MODULES.get(base[0][0]) if base else None
    if depth == 1 and module:
        return {f"{module}:{k}": v for k, v in tree.items()}
    if depth == 0:
        return {f"{MODULES.get(k, k)}:{k}": v for k, v in tree.items()}
    return tree


def _lists(node: dict[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in node.items():
        if isinstance(v, dict) and v and all(isinstance(kk, tuple) for kk in v):
            out[k] = [_lists(entry) for entry in v.values()]
        elif isinstance(v, dict):
            out[k] = _lists(v)
        else:
            out[k] = v
    return out
