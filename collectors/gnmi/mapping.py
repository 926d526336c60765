"""Path templates and the gNMI mapper: a received path → (metric, port, qual), resolved once.

A template is a gNMI path in text form with captures: ``{port}`` (the port name), ``{qual}`` (the
PFC priority or queue index, digits), ``*`` (any characters within one element name or key value)
and ``**`` (any number of further elements). Keys are compared in name order, the way
:func:`canonical` writes a received path.

:class:`PathMapper` holds a profile's compiled rules and the table of *series specs* every path
resolved so far (one spec per distinct ``(metric, port, qual)`` with how to read its value). Specs
are numbered densely so the hot path can keep per-spec state in numpy arrays. The mapper is shared
by every target of a profile in a collector: the same dialect sends the same paths, so each path
is matched against the rules once per process, not once per device.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors.profile import GnmiProfile, Leaf
from pipeline.metrics import CATALOG, IS_COUNTER
from pipeline.model import FLAG_COUNTER32

#: spec ids below zero: the path matched no rule, or matched an ``ignore`` template
UNKNOWN = -1
IGNORED = -2

_SEGMENT = re.compile(r"((?:[^/\[]|\[[^\]]*\])+)")
_KEY = re.compile(r"\[([^=\]]+)=([^\]]*)\]")


def split_path(text: str) -> list[tuple[str, dict[str, str]]]:
    """``/a/b[k=v]/c`` → ``[("a", {}), ("b", {"k": "v"}), ("c", {})]`` (``/`` inside keys kept)."""
    out: list[tuple[str, dict[str, str]]] = []
    for seg in _SEGMENT.findall(text.strip("/")):
        name = seg.split("[", 1)[0]
        out.append((name, dict(_KEY.findall(seg[len(name):]))))
    return out


def canonical(elems: Iterable[tuple[str, Mapping[str, str]]]) -> str:
    """The text form of a received path: ``/name[k=v]...`` with keys in name order."""
    parts = []
    for name, keys in elems:
        parts.append(name + "".join(f"[{k}={keys[k]}]" for k in sorted(keys)))
    return "/" + "/".join(parts)


def _name_regex(text: str) -> str:
    out = []
    for token in re.split(r"(\{port\}|\{qual\}|\*)", text):
        if token == "{port}":
            out.append(r"(?P<port>[^/\[\]:]+)")
        elif token == "{qual}":
            out.append(r"(?P<qual>\d+)")
        elif token == "*":
            out.append(r"[^/\[\]]*")
        else:
            out.append(re.escape(token))
    return "".join(out)


def _value_regex(text: str) -> str:
    out = []
    for token in re.split(r"(\{port\}|\{qual\}|\*)", text):
        if token == "{port}":
            out.append(r"(?P<port>[^\]]+)")
        elif token == "{qual}":
            out.append(r"(?P<qual>\d+)")
        elif token == "*":
            out.append(r"[^\]]*")
        else:
            out.append(re.escape(token))
    return "".join(out)


def compile_template(template: str) -> re.Pattern[str]:
    """A template as a regular expression over :func:`canonical` paths."""
    regex = []
    for name, keys in split_path(template):
        if name == "**" and not keys:
            regex.append(r"(?:/.+)?")
            continue
        seg = "/" + _name_regex(name)
        for key in sorted(keys):
            seg += r"\[" + re.escape(key) + "=" + _value_regex(keys[key]) + r"\]"
        regex.append(seg)
    return re.compile("^" + "".join(regex) + "$")


def subscription_path(template: str) -> str:
    """The path to subscribe to: every capture becomes a wildcard."""
    return template.replace("{port}", "*").replace("{qual}", "*")


@dataclass(frozen=True, slots=True)
class Spec:
    """One series a path resolves to, and how its raw value is read."""

    metric: int
    port: str
    qual: int
    enum: Mapping[str, int] | None
    scale: float
    flags: int
    #: from a SAMPLE subscription: the target should send it every interval
    sampled: bool


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    leaf: Leaf
    sampled: bool


class PathMapper:
    """A profile's rules plus the growing table of resolved series specs (thread-safe)."""

    def __init__(self, profile: GnmiProfile) -> None:
        self.profile = profile
        self._rules: list[_Rule] = []
        for group in profile.groups:
            for rel, leaf in group.leaves.items():
                full = f"{group.path.rstrip('/')}/{rel}" if rel else group.path
                self._rules.append(_Rule(compile_template(full), leaf, group.mode == "sample"))
        self._ignore = [compile_template(t) for t in profile.ignore]
        #: serialized prefix → {serialized path (or JSON member key tuple) → spec id}: the decoders'
        #: cache, shared by every target of the profile
        self.byte_cache: dict[bytes, dict[Any, int]] = {}
        self._by_path: dict[str, int] = {}
        self._by_series: dict[tuple[int, str, int], int] = {}
        self.specs: list[Spec] = []
        #: per spec: its value is a plain number (no enum), so a numeric string parses inline
        self.plain: list[bool] = []
        #: per spec: from a SAMPLE subscription (the hot path's copy of ``Spec.sampled``)
        self.sampled: list[bool] = []
        self.ports: list[str] = [""]
        self._port_code: dict[str, int] = {"": 0}
        self._lock = threading.Lock()
        self._arrays_for = -1
        self._arrays: tuple[NDArray[np.uint16], NDArray[np.int32], NDArray[np.int16],
                            NDArray[np.float64], NDArray[np.uint8], NDArray[np.bool_]] | None = None
        self._sampled: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        #: True once any spec has a scale other than 1 (the decoder then multiplies)
        self.scaled = False

    def resolve(self, path: str) -> int:
        """The spec id of a canonical path, :data:`UNKNOWN` or :data:`IGNORED`; cached."""
        sid = self._by_path.get(path)
        if sid is not None:
            return sid
        with self._lock:
            sid = self._by_path.get(path)
            if sid is None:
                sid = self._match(path)
                self._by_path[path] = sid
        return sid

    def _match(self, path: str) -> int:
        for rule in self._rules:
            m = rule.pattern.match(path)
            if m is None:
                continue
            groups = m.groupdict()
            port = groups["port"]
            qual = int(groups["qual"]) if groups.get("qual") is not None else -1
            if not -1 <= qual <= 32767:
                return UNKNOWN
            leaf = rule.leaf
            key = (leaf.metric_code, port, qual)
            sid = self._by_series.get(key)
            if sid is None:
                enum = self.profile.enums[leaf.enum] if leaf.enum else None
                if enum is not None:
                    # vendors differ in case (UP/up) and may module-qualify identities
                    enum = {k.lower(): v for k, v in enum.items()}
                flags = FLAG_COUNTER32 if leaf.counter32 else 0
                sid = len(self.specs)
                self.specs.append(Spec(leaf.metric_code, port, qual, enum, leaf.scale, flags,
                                       rule.sampled))
                self.plain.append(enum is None)
                self.sampled.append(rule.sampled)
                self.scaled = self.scaled or leaf.scale != 1.0
                self._by_series[key] = sid
                if port not in self._port_code:
                    self._port_code[port] = len(self.ports)
                    self.ports.append(port)
            return sid
        if any(p.match(path) for p in self._ignore):
            return IGNORED
        return UNKNOWN

    def arrays(self) -> tuple[NDArray[np.uint16], NDArray[np.int32], NDArray[np.int16],
                              NDArray[np.float64], NDArray[np.uint8], NDArray[np.bool_]]:
        """Per-spec columns ``(metric, port code, qual, scale, flags, is_counter)``."""
        arrays = self._arrays
        if arrays is None or self._arrays_for != len(self.specs):
            with self._lock:
                specs = list(self.specs)
                metric = np.array([s.metric for s in specs], dtype=np.uint16)
                arrays = (
                    metric,
                    np.array([self._port_code[s.port] for s in specs], dtype=np.int32),
                    np.array([s.qual for s in specs], dtype=np.int16),
                    np.array([s.scale for s in specs], dtype=np.float64),
                    np.array([s.flags for s in specs], dtype=np.uint8),
                    IS_COUNTER[metric] if specs else np.empty(0, dtype=bool),
                )
                self._sampled = np.array([s.sampled for s in specs], dtype=bool)
                self._arrays, self._arrays_for = arrays, len(specs)
        return arrays

    def sampled_mask(self) -> NDArray[np.bool_]:
        """Per spec: True when it comes from a SAMPLE subscription (call after :meth:`arrays`)."""
        return self._sampled

    def is_counter(self, sid: int) -> bool:
        return bool(IS_COUNTER[self.specs[sid].metric])

    def under(self, path: str) -> list[int]:
        """Spec ids of every resolved path at or below ``path`` (a gNMI delete)."""
        with self._lock:
            items = list(self._by_path.items())
        return sorted({sid for p, sid in items if sid >= 0 and
                       (p == path or p.startswith(path + "/") or p.startswith(path + "["))})

    def describe(self, sid: int) -> str:
        spec = self.specs[sid]
        qual = f"[{spec.qual}]" if spec.qual >= 0 else ""
        return f"{CATALOG[spec.metric].name}{qual}@{spec.port}"
