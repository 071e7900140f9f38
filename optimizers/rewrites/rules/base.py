"""A rewrite rule: a name, a sentence on what it does and why it keeps the meaning, and its egglog ruleset;
``Dialects``: the SQL dialects a rule module's rules keep a statement's meaning in (each rule module declares its
own as ``DIALECTS``; ``optimizers.rewrites.rules.for_dialect`` leaves out the rules of a module that does not hold in
a problem's dialect, with the reason); and ``Facts``: what the catalog says, which the statement-level rules read
(``rules.statement``, ``rules.simplify``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from egglog import Ruleset, ruleset


@dataclass(frozen=True)
class Dialects:
    """Where a rule module's rules hold: in the dialects ``valid`` (the connectors' dialect keys, ``postgres``,
    ``mariadb``, ``mysql``: ``connectors.dialects``, so MariaDB and MySQL can differ; None: in every dialect the
    rewriter reads), less those ``refused``, each with why its semantics break the rules (e.g. how NULLs compare,
    what a GROUP BY may select)."""

    valid: frozenset[str] | None = None
    refused: tuple[tuple[str, str], ...] = ()  # (dialect, why the rules do not hold in it)

    def why_not(self, dialect: str) -> str | None:
        """Why the rules do not hold in ``dialect``; None where they do.

        >>> Dialects(refused=(("mysql", "NULLs sort first"),)).why_not("mysql"), Dialects().why_not("mysql")
        ('NULLs sort first', None)
        >>> Dialects(refused=(("mysql", "NULLs sort first"),)).why_not("mariadb") is None  # keys, not sqlglot's
        True
        >>> Dialects(frozenset({"postgres"})).why_not("mysql")
        'its rules are stated for postgres semantics only'
        """
        for name, why in self.refused:
            if name == dialect:
                return why
        if self.valid is not None and dialect not in self.valid:
            return f"its rules are stated for {', '.join(sorted(self.valid))} semantics only"
        return None


EVERY_DIALECT = Dialects()


@dataclass(frozen=True)
class Rule:
    name: str
    doc: str
    rules: Ruleset
    repeat: int = 1  # passes of the ruleset per run (a rule that moves a term one step at a time takes several)

    @classmethod
    def of(cls, name: str, doc: str, *rewrites, repeat: int = 1) -> "Rule":
        return cls(name, doc, ruleset(*rewrites, name=name), repeat)


@dataclass(frozen=True)
class Facts:
    """What the catalog says: columns by table, (table, column) pairs declared NOT NULL, unique keys by table (primary
    key and unique indexes), foreign keys as (table, columns, referenced table, referenced columns), and the SQL
    dialect (sqlglot's name) the statements are read and written in."""

    schema: dict[str, dict[str, str]]
    not_null: frozenset[tuple[str, str]]
    keys: dict[str, tuple[tuple[str, ...], ...]]
    foreign_keys: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = ()
    dialect: str = field(kw_only=True)

    def not_null_keys(self, table: str) -> list[tuple[str, ...]]:
        return [k for k in self.keys.get(table, ()) if all((table, c) in self.not_null for c in k)]
