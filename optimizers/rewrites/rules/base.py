"""A rewrite rule: a name, a sentence on what it does and why it keeps the meaning, and its egglog ruleset."""

from __future__ import annotations

from dataclasses import dataclass

from egglog import Ruleset, ruleset


@dataclass(frozen=True)
class Rule:
    name: str
    doc: str
    rules: Ruleset
    repeat: int = 1  # passes of the ruleset per run (a rule that moves a term one step at a time takes several)

    @classmethod
    def of(cls, name: str, doc: str, *rewrites, repeat: int = 1) -> "Rule":
        return cls(name, doc, ruleset(*rewrites, name=name), repeat)
