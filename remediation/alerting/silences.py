"""Silences: matchers plus a time window (event time) that mute notifications.

Silences come from the config file (maintenance windows), from people through the commands topic,
and from the drain runbook itself (a link we drained must not page anyone for being down). A
silence mutes only notifications: alerts still reach the store and still drive the runbooks'
bookkeeping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pipeline.matchers import Matcher, match_all, parse_matcher, parse_matchers


@dataclass(frozen=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_ns: int
    ends_ns: int
    created_by: str = ""
    comment: str = ""

    def active(self, at_ns: int) -> bool:
        return self.starts_ns <= at_ns < self.ends_ns

    def mutes(self, labels: Mapping[str, str], at_ns: int) -> bool:
        return self.active(at_ns) and match_all(self.matchers, labels)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "matchers": [str(m) for m in self.matchers],
                "starts_ns": self.starts_ns, "ends_ns": self.ends_ns,
                "created_by": self.created_by, "comment": self.comment}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Silence:
        return cls(str(data["id"]), tuple(parse_matcher(m) for m in data["matchers"]),
                   int(data["starts_ns"]), int(data["ends_ns"]),
                   str(data.get("created_by", "")), str(data.get("comment", "")))


def silence_id(matchers: Iterable[str], starts_ns: int, created_by: str) -> str:
    """A deterministic id, so a command delivered twice makes one silence."""
    text = "\0".join([*sorted(matchers), str(starts_ns), created_by])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Silences:
    """The set of silences; expired ones are kept for ``retain_ns`` then dropped."""

    def __init__(self, retain_ns: int = 24 * 3600 * 10**9) -> None:
        self._by_id: dict[str, Silence] = {}
        self.retain_ns = retain_ns

    def add(self, matchers: Iterable[str], starts_ns: int, ends_ns: int,
            created_by: str = "", comment: str = "", id: str = "") -> Silence:
        texts = tuple(matchers)
        sid = id or silence_id(texts, starts_ns, created_by)
        silence = Silence(sid, parse_matchers(texts), starts_ns, ends_ns, created_by,
                          comment)
        self._by_id[sid] = silence
        return silence

    def put(self, silence: Silence) -> None:
        self._by_id[silence.id] = silence

    def expire(self, sid: str, at_ns: int) -> Silence | None:
        """End a silence now; returns it, or None when there is no such silence."""
        silence = self._by_id.get(sid)
        if silence is None:
            return None
        ended = replace(silence, ends_ns=min(silence.ends_ns, at_ns))
        self._by_id[sid] = ended
        return ended

    def get(self, sid: str) -> Silence | None:
        return self._by_id.get(sid)

    def muting(self, labels: Mapping[str, str], at_ns: int) -> list[Silence]:
        return [s for s in self._by_id.values() if s.mutes(labels, at_ns)]

    def mutes(self, labels: Mapping[str, str], at_ns: int) -> bool:
        return any(s.mutes(labels, at_ns) for s in self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def gc(self, at_ns: int) -> None:
        for sid in [s.id for s in self._by_id.values() if s.ends_ns + self.retain_ns < at_ns]:
            del self._by_id[sid]

    def all(self) -> list[Silence]:
        return sorted(self._by_id.values(), key=lambda s: (s.starts_ns, s.id))
