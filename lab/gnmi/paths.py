"""gNMI paths as plain tuples: parsing, printing, conversion to and from protobuf, and matching.

An element is ``(name, keys)`` with ``keys`` a sorted tuple of ``(key, value)`` pairs, so paths
are hashable and cheap to compare. A request path matches a leaf when it is a prefix of it, element
by element: names are equal or ``*``, each key given is equal or ``*``, keys left out match any
value, and a ``...`` element matches any number of elements.
"""

from __future__ import annotations

from pygnmi.spec.v080 import gnmi_pb2 as pb

Elem = tuple[str, tuple[tuple[str, str], ...]]
PathT = tuple[Elem, ...]


def parse(text: str) -> PathT:
    """Parse ``/a/b[k=v][k2=v2]/c`` (values may contain ``/``, ``:`` and ``*``)."""
    elems: list[Elem] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "/":
            i += 1
            continue
        name_start = i
        while i < n and text[i] not in "/[":
            i += 1
        name = text[name_start:i]
        keys: list[tuple[str, str]] = []
        while i < n and text[i] == "[":
            close = text.index("]", i)
            k, _, v = text[i + 1:close].partition("=")
            keys.append((k, v))
            i = close + 1
        elems.append((name, tuple(sorted(keys))))
    return tuple(elems)


def to_text(path: PathT) -> str:
    return "/" + "/".join(
        name + "".join(f"[{k}={v}]" for k, v in keys) for name, keys in path)


def from_pb(path: pb.Path) -> PathT:
    if path.elem:
        return tuple((e.name, tuple(sorted(e.key.items()))) for e in path.elem)
    # gNMI 0.4-style string elements; still sent by some clients
    return tuple(parse("/".join(path.element))) if path.element else ()


def to_pb(path: PathT, origin: str = "", target: str = "") -> pb.Path:
    return pb.Path(origin=origin, target=target,
                   elem=[pb.PathElem(name=name, key=dict(keys)) for name, keys in path])


def join(prefix: PathT, path: PathT) -> PathT:
    return prefix + path


def matches(pattern: PathT, leaf: PathT) -> bool:
    """True when ``leaf`` lies under ``pattern``."""
    return _match(pattern, 0, leaf, 0)


def _match(pat: PathT, i: int, leaf: PathT, j: int) -> bool:
    while i < len(pat):
        name, keys = pat[i]
        if name == "...":
            return any(_match(pat, i + 1, leaf, jj) for jj in range(j, len(leaf) + 1))
        if j >= len(leaf):
            return False
        lname, lkeys = leaf[j]
        if name not in ("*", lname):
            return False
        if keys:
            have = dict(lkeys)
            for k, v in keys:
                if v != "*" and have.get(k) != v:
                    return False
        i += 1
        j += 1
    return True


def has_wildcard(path: PathT) -> bool:
    return any(name in ("*", "...") or any(v == "*" for _, v in keys) for name, keys in path)
