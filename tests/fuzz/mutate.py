"""Mutations of a valid document (a config, a scenario, a targets file) for the loaders'
properties: one value replaced by any YAML value, one key dropped, or one unknown key added, at a
place hypothesis picks in the nested mappings and lists."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

#: what a YAML file can hold in one place
yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
    | st.text(max_size=16) | st.sampled_from(("", "0", "-1", "1e999", "nan", "1h30m", "now",
                                             "../../etc/passwd", "a" * 300)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=3),
    max_leaves=10)


def _places(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.extend(_places(value, (*path, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.extend(_places(value, (*path, i)))
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one to three mutations."""
    out = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        places = _places(out)
        path = draw(st.sampled_from(places))
        if not path:
            continue
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        action = draw(st.sampled_from(("replace", "replace", "drop", "add")))
        if action == "replace":
            parent[last] = draw(yaml_values)
        elif action == "drop" and isinstance(parent, dict):
            del parent[last]
        elif action == "drop" and isinstance(parent, list):
            parent.pop(last)
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(yaml_values)
    return out
