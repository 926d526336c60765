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

from pipeline.model import Alert
from remediation.alertview import match_labels
from remediation.matchers import Matcher, match_all, parse_matchers
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

    def inhibited_by(self, alert: Alert, firing: Mapping[str, Alert]) -> str | None:
        """The fingerprint of the firing alert that mutes ``alert``, or None.

        ``firing`` maps fingerprint → alert for every alert firing now.
        """
        fp = alert.fingerprint
        if alert.inhibited_by and alert.inhibited_by != fp and alert.inhibited_by in firing:
            return alert.inhibited_by
        if not self.rules:
            return None
        labels = match_labels(alert)
        for rule in self.rules:
            if not match_all(rule.target, labels):
                continue
            for src_fp, source in firing.items():
                if src_fp == fp:
                    continue
                src_labels = match_labels(source)
                if match_all(rule.source, src_labels) and all(
                        src_labels.get(k, "") == labels.get(k, "") for k in rule.equal):
                    return src_fp
        return None
