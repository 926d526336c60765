"""Label matchers in Alertmanager's syntax: ``name="value"``, ``name!="v"``, ``name=~"re"``,
``name!~"re"``.

Routes, inhibit rules and silences all select alerts with these. Regular expressions are anchored
at both ends, as in Alertmanager; a label that is absent matches as the empty string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.errors import ConfigError

_MATCHER = re.compile(
    r"""^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*"""
    r"""(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^"\s][^\s]*)?)\s*$"""
)
OPERATORS = ("=", "!=", "=~", "!~")


@dataclass(frozen=True)
class Matcher:
    """One label test; ``is_regex``/``is_equal`` follow Alertmanager's API v2 matcher fields."""

    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.is_regex:
            try:
                object.__setattr__(self, "_pattern", re.compile(f"(?:{self.value})"))
            except re.error as exc:
                raise ConfigError(f"matcher {self.name}: bad regular expression "
                                  f"{self.value!r}: {exc}") from None

    @property
    def op(self) -> str:
        return {(False, True): "=", (False, False): "!=", (True, True): "=~",
                (True, False): "!~"}[(self.is_regex, self.is_equal)]

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{self.op}"{escaped}"'

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.name, "")
        if self._pattern is not None:
            hit = self._pattern.fullmatch(value) is not None
        else:
            hit = value == self.value
        return hit if self.is_equal else not hit

    def to_api(self) -> dict[str, str | bool]:
        """The Alertmanager API v2 form."""
        return {"name": self.name, "value": self.value, "isRegex": self.is_regex,
                "isEqual": self.is_equal}


def parse_matcher(text: str) -> Matcher:
    """Parse one ``name<op>"value"`` matcher; raises ConfigError saying what is wrong."""
    m = _MATCHER.match(text)
    if m is None:
        raise ConfigError(f'not a matcher: {text!r} (want name="value", name!="value", '
                          'name=~"regex" or name!~"regex")')
    op = m.group("op")
    quoted = m.group("quoted")
    value = (re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
             else (m.group("bare") or ""))
    return Matcher(m.group("name"), value, is_regex=op in ("=~", "!~"),
                   is_equal=op in ("=", "=~"))


def parse_matchers(texts: Iterable[str]) -> tuple[Matcher, ...]:
    return tuple(parse_matcher(t) for t in texts)


def match_all(matchers: Iterable[Matcher], labels: Mapping[str, str]) -> bool:
    """True when every matcher accepts ``labels`` (no matchers: always true)."""
    return all(m.matches(labels) for m in matchers)
