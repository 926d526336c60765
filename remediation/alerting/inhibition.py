"""Inhibition: a firing alert mutes others. Two sources of truth:

* the correlator's verdict: a symptom carries ``inhibited_by`` (the fingerprint of the root-cause
  incident that explains it) and is muted while that incident fires — cause-based suppression
  across different label sets, which Alertmanager's rules cannot express (alertmanager#2254);
* configured ``inhibit_rules`` (Alertmanager's: source matchers, target matchers, equal labels).

An alert never inhibits itself. Muting applies to notifications only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pipeline.matchers import Matcher, match_all, parse_matchers
from pipeline.model import Alert
from remediation.alerting.labels import match_labels
from remediation.settings import InhibitRule


@dataclass(frozen=True)
class Rule:
    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...]

    @classmethod
    def from_settings(cls, rule: InhibitRule) -> Rule:
        return cls(parse_matchers(rule.source_matchers), parse_matchers(rule.target_matchers),
                   rule.equal)


class Inhibitor:
    def __init__(self, rules: Iterable[InhibitRule] = ()) -> None:
        self.rules = tuple(Rule.from_settings(r) for r in rules)

    def snapshot(self, firing: Mapping[str, Alert]) -> Inhibition:
        """What inhibits what while ``firing`` (fingerprint → alert) fires."""
        return Inhibition(self.rules, firing)

    def inhibited_by(self, alert: Alert, firing: Mapping[str, Alert]) -> str | None:
        return self.snapshot(firing).inhibited_by(alert)


class Inhibition:
    """The firing alerts indexed once per flush: per rule, the values of its ``equal`` labels
    → the sources that fire with them, so each check is a lookup, not a scan."""

    def __init__(self, rules: tuple[Rule, ...], firing: Mapping[str, Alert]) -> None:
        self.rules = rules
        self.firing = firing
        self._index: list[dict[tuple[str, ...], list[str]]] = []
        for rule in rules:
            index: dict[tuple[str, ...], list[str]] = {}
            for fp, source in firing.items():
                labels = match_labels(source)
                if match_all(rule.source, labels):
                    index.setdefault(tuple(labels.get(k, "") for k in rule.equal), []).append(fp)
            self._index.append(index)

    def inhibited_by(self, alert: Alert, fp: str = "") -> str | None:
        """The fingerprint of the firing alert that mutes ``alert`` (whose fingerprint ``fp``
        the caller may know already), or None."""
        fp = fp or alert.fingerprint
        if alert.inhibited_by and alert.inhibited_by != fp and alert.inhibited_by in self.firing:
            return alert.inhibited_by
        if not self.rules:
            return None
        labels = match_labels(alert)
        for rule, index in zip(self.rules, self._index, strict=True):
            if not match_all(rule.target, labels):
                continue
            for src in index.get(tuple(labels.get(k, "") for k in rule.equal), ()):
                if src != fp:
                    return src
        return None
