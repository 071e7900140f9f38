"""A lowered statement (``optimizers.rewrites.lower``) as an e-graph term, with the facts the analyses start
from (scan rows, atom selectivities, the per-row cost of a correlated subquery) and the alternatives the
expanding rules (``optimizers.rewrites.rules.decorrelate``) add as equal to the form written."""

from __future__ import annotations

from collections.abc import Callable

from egglog import set_, set_cost, union

from optimizers.rewrites.algebra import Pred, Rel, alias_set, rows as rows_fn, selectivity as sel_fn
from optimizers.rewrites.lower import Atom, Lowered, Unsupported
from optimizers.rewrites.rules import decorrelate

Selectivity = Callable[[Atom], float]
NOT_IN_PENALTY = 1000
DERIVED_ROWS = 0.1  # a grouped subquery's rows per row of its input, without better knowledge


def to_term(low: Lowered, rows: dict[str, float], selectivity: Selectivity,
            not_null: frozenset[tuple[str, str]] = frozenset()) -> tuple[Rel, list, list]:
    """The core as a term, the facts to register with it, and the expanding rules' forms (unions of a written
    part with its alternative; registered after the written statement's cost is taken). ``rows``: estimated rows
    per table; ``selectivity(atom)``: the fraction of rows an atom keeps; ``not_null``: (table, column) pairs
    declared NOT NULL (what turning NOT IN into an anti-join needs)."""
    facts: list = []
    expansions: list = []
    tables = dict(_all_tables(low))
    taken = set(tables)

    def pred(atoms: tuple[Atom, ...]) -> Pred:
        out = None
        for atom in atoms:
            if atom.kind not in ("plain", "scalar"):
                raise Unsupported("[NOT] EXISTS inside a JOIN's ON is not in the rewriter's subset")
            term = Pred.atom(atom.sql, alias_set(atom.refs), alias_set(atom.rejects))
            facts.append(set_(sel_fn(term)).to(float(selectivity(atom))))
            out = term if out is None else Pred.both(out, term)
        return out if out is not None else pred((Atom("TRUE", frozenset(), frozenset()),))

    def scan(table: str, alias: str) -> Rel:
        term = Rel.scan(table, alias)
        facts.append(set_(rows_fn(term)).to(float(max(rows.get(table, 1000.0), 1.0))))
        return term

    def inner_rows(sub: Lowered) -> float:
        out = 1.0
        for table, _ in sub.tables:
            out = max(out, rows.get(table, 1000.0))
        return out

    def core(l: Lowered) -> Rel:
        by_alias = {alias: table for table, alias in l.tables}
        rel = scan(*l.tables[0])
        for alias, how, on in l.joins:
            right = scan(by_alias[alias], alias)
            rel = rel.join(right, pred(on)) if how == "inner" else rel.left(right, pred(on))
        for atom in l.atoms:
            if atom.kind == "plain":
                rel = rel.filter(pred((atom,)))
            elif atom.kind == "scalar":
                written = pred((atom,))
                # a correlated subquery runs once per outer row: its atom costs its input's rows per probe
                facts.append(set_cost(written, int(min(inner_rows(atom.sub), 1e12))))
                plain = rel.filter(written)
                alt = decorrelate.scalar_aggregate(atom, _fresh(taken, "dc"))
                if isinstance(alt, decorrelate.Decorrelated):
                    derived = Rel.derived(alt.sql, alt.alias)
                    facts.append(set_(rows_fn(derived)).to(max(1.0, DERIVED_ROWS * inner_rows(atom.sub))))
                    on, cmp = pred(alt.on), pred((alt.compare,))
                    joined = rel.left(derived, on) if alt.outer else rel.join(derived, on)
                    expansions.append(union(plain).with_(joined.filter(cmp)))
                rel = plain
            elif atom.kind == "not_in":
                written = pred((Atom(atom.sql, atom.refs, frozenset()),))
                # a hashed NOT IN reads its subquery once, like an anti-join, but rescans it per row once it no
                # longer fits work_mem and never gets the anti-join's strategies: priced above the anti-join
                facts.append(set_cost(written, int(min(2 * inner_rows(atom.sub) + NOT_IN_PENALTY, 1e12))))
                plain = rel.filter(written)
                if decorrelate.null_safe(atom, tables, not_null):
                    expansions.append(union(plain).with_(rel.anti(*subquery(atom.sub))))
                rel = plain
            else:
                right, corr = subquery(atom.sub)
                rel = rel.semi(right, corr) if atom.kind == "exists" else rel.anti(right, corr)
        return rel

    def subquery(sub: Lowered) -> tuple[Rel, Pred]:
        inner = [a for a in sub.atoms if a.refs <= sub.aliases]
        corr = tuple(a for a in sub.atoms if not a.refs <= sub.aliases)
        return core(Lowered(sub.tables, sub.joins, tuple(inner), sub.shell)), pred(corr)

    return core(low), facts, expansions


def _all_tables(low: Lowered):
    """(alias, table) of the statement and all its subqueries (aliases are unique: see ``lower``)."""
    yield from ((a, t) for t, a in low.tables)
    for atom in low.atoms:
        if atom.sub is not None:
            yield from _all_tables(atom.sub)


def _fresh(taken: set[str], stem: str) -> str:
    n = 1
    while f"{stem}{n}" in taken:
        n += 1
    taken.add(f"{stem}{n}")
    return f"{stem}{n}"
