"""A rewrite rule: a name, a sentence on what it does and why it keeps the meaning, and its egglog ruleset."""

from __future__ import annotations

from dataclasses import dataclass

from egglog import Ruleset, ruleset


@dataclass(frozen=True)
class Rule:
    name: str
    doc: str
    rules: Ruleset

    @classmethod
    def of(cls, name: str, doc: str, *rewrites) -> "Rule":
        return cls(name, doc, ruleset(*rewrites, name=name))
