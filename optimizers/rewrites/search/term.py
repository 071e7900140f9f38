"""A lowered statement (``optimizers.rewrites.sql.lower``) as an e-graph term, with the facts the analyses start
from (scan rows, atom selectivities, the per-row cost of a correlated subquery) and the alternatives the
expanding rules (``optimizers.rewrites.rules.decorrelate``) add as equal to the form written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from egglog import String, set_, set_cost, union
from sqlglot import exp

from optimizers.rewrites.algebra.analyses import (GROUP_WEIGHT, columns, equal_to, keyed_view, nonnull, notin_keys,
                                                  notin_on, notin_sub, per_row, pushed, rows as rows_fn,
                                                  selectivity as sel_fn, strict_on, unique_on, unordered)
from optimizers.rewrites.algebra.terms import alias_set, Pred, Rel
from optimizers.rewrites.sql.lowered import VIEW, Atom, Lowered
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.rules import decorrelate, decorrelate_shell, holds
from optimizers.rewrites.sql.shell_operators import Groups, clause_texts, group_keys, shell

Selectivity = Callable[[Atom], float]
NOT_IN_PENALTY = 1000
DERIVED_ROWS = 0.1  # a grouped subquery's rows per row of its input, without better knowledge


def to_term(low: Lowered, rows: dict[str, float], selectivity: Selectivity,
            not_null: frozenset[tuple[str, str]] = frozenset(),
            keys: dict[str, tuple[tuple[str, ...], ...]] | None = None,
            schema: dict[str, dict[str, str]] | None = None, groups: Groups | None = None) -> tuple[Rel, list, list]:
    """The statement as a term, the facts to register with it, and the expanding rules' forms (unions of a written
    part with its alternative; registered after the written statement's cost is taken). ``rows``: estimated rows
    per table; ``selectivity(atom)``: the fraction of rows an atom keeps; ``not_null``: (table, column) pairs
    declared NOT NULL (where the nullability analysis starts); ``keys``: unique keys by table (a scan of a
    table with a one-column key is unique on it); ``schema``: columns by table (a scan's output columns);
    ``groups(keys)``: the groups a GROUP BY makes over its whole input, where the statistics know
    (``optimizers.rewrites.sql.shell_operators``)."""
    facts: list = []
    expansions: list = []
    taken = {alias for alias, _ in _all_tables(low)}
    # nullability is stated only for the columns a NOT IN compares and for NOT NULL one-column keys (all the
    # rules read): stating it for every NOT NULL column would fill the analysis with facts for each column of
    # each join class
    compared = {f"{c.table}.{c.name}" for a in _all_atoms(low) if a.kind == "not_in" for c in a.detail
                if isinstance(c, exp.Column)}
    compared |= {f"{alias}.{k[0]}" for alias, table in _all_tables(low) for k in (keys or {}).get(table, ())
                 if len(k) == 1 and (table, k[0]) in not_null}
    pushes = dict(_all_pushes(low))

    def pred(atoms: tuple[Atom, ...]) -> Pred:
        out = None
        for atom in atoms:
            if atom.kind not in ("plain", "scalar"):
                raise Unsupported("[NOT] EXISTS inside a JOIN's ON is not in the rewriter's subset")
            term = Pred.atom(atom.sql, alias_set(atom.refs), alias_set(atom.rejects))
            facts.append(set_(sel_fn(term)).to(float(selectivity(atom))))
            facts.extend(set_(equal_to(term, column)).to(alias_set(other)) for column, other in atom.equals)
            facts.extend(strict_on(term, String(column)) for column in atom.nonnull & compared)
            if atom.sql in pushes:
                inner = pred((pushes[atom.sql],))
                # the same rows kept, counted below the view: the outer atom's selectivity
                facts.extend([set_(pushed(term)).to(inner), set_(sel_fn(inner)).to(float(selectivity(atom)))])
            out = term if out is None else Pred.both(out, term)
        return out if out is not None else pred((Atom("TRUE", frozenset(), frozenset()),))

    def scan(table: str, alias: str) -> Rel:
        term = Rel.scan(table, alias)
        facts.append(set_(rows_fn(term)).to(float(max(rows.get(table, 1000.0), 1.0))))
        facts.extend(unique_on(term, String(f"{alias}.{k[0]}")) for k in (keys or {}).get(table, ()) if len(k) == 1)
        facts.extend(nonnull(term, String(f"{alias}.{c}")) for t, c in not_null
                     if t == table and f"{alias}.{c}" in compared)
        own = frozenset(f"{alias}.{c}" for c in (schema or {}).get(table, ()))
        facts.append(set_(columns(term)).to(alias_set(own)))
        return term

    def item(l: Lowered, table: str, alias: str) -> Rel:
        if table != VIEW:
            return scan(table, alias)
        view = next(v for v in l.views if v.alias == alias)
        facts.extend(keyed_view(String(view.written), String(f"{alias}.{k}")) for k in view.shape.keys)
        term = Rel.view(selected(view.query), alias, view.written)
        if view.unordered:
            facts.append(unordered(String(view.written)))
        facts.append(set_(columns(term)).to(alias_set(frozenset(f"{alias}.{c}" for c in view.columns))))
        return term

    def selected(l: Lowered) -> Rel:
        """A SELECT's core under its shell's operators; where subqueries of its shell can be decorrelated, the
        shell over its core LEFT JOINed with their derived tables is added as equal (``rules.decorrelate_shell``)."""
        below = core(l)
        term, found = shell(l, below, groups)
        facts.extend(found)
        form = decorrelate_shell.unnest(l, lambda: _fresh(taken, "dc"), keys, not_null) \
            if holds(decorrelate_shell, l.dialect) else decorrelate_shell.ShellForm(None)
        q = l.qualified if l.qualified is not None else l.shell
        facts.extend(_probes(l.subqueries, q, inner_rows, l.dialect))
        if form.select is None:
            return term
        alt = below
        for j in form.joins:
            alt = left_joined(alt, j)
        done = {s.sql for s in form.done}
        facts.extend(_probes(tuple(s for s in l.subqueries if s.sql not in done), form.select, inner_rows, l.dialect))
        written_keys = group_keys(q, dialect=l.dialect) if isinstance(q, exp.Select) else ""
        keys_now = group_keys(form.select, dialect=l.dialect)
        regrouped = None if groups is None else (lambda k: groups(written_keys) if k == keys_now else groups(k))
        reshelled = replace(l, qualified=form.select) if l.qualified is not None else replace(l, shell=form.select)
        alt_term, found = shell(reshelled, alt, regrouped)
        facts.extend(found)
        expansions.append(union(term).with_(alt_term))
        return term

    def left_joined(rel: Rel, j: decorrelate_shell.Join) -> Rel:
        """``rel`` LEFT JOINed with a shell subquery's derived table, with what is known of it: its rows (a tenth of
        its table's when grouped, without better knowledge), columns and key, its cost (reading, and grouping, its
        table), and an ON condition that meets at most one of its rows per row of ``rel``."""
        derived, scanned = Rel.derived(j.sql, j.alias), float(inner_rows(j.sub))
        size = max(1.0, DERIVED_ROWS * scanned) if j.grouped else scanned
        names = [f"{j.alias}.k{n}" for n in range(1, len(j.on) + 1)] + [f"{j.alias}.v"]
        facts.extend([set_(rows_fn(derived)).to(size), set_(columns(derived)).to(alias_set(frozenset(names))),
                      set_cost(derived, int(min(scanned * (1 + GROUP_WEIGHT if j.grouped else 1), 1e12)))])
        if len(j.on) == 1:
            facts.append(unique_on(derived, String(f"{j.alias}.k1")))
        on = pred(j.on)
        share = size ** (-1 / len(j.on))  # the conditions together keep one derived row in ``size``
        facts.extend(set_(sel_fn(Pred.atom(a.sql, alias_set(a.refs), alias_set(a.rejects)))).to(share) for a in j.on)
        return rel.left(derived, on)

    def inner_rows(sub: Lowered) -> float:
        out = 1.0
        for table, _ in sub.tables:
            out = max(out, rows.get(table, 1000.0) if table != VIEW else 1.0)
        return out

    def core(l: Lowered) -> Rel:
        by_alias = {alias: table for table, alias in l.tables}
        rel = item(l, *l.tables[0])
        for alias, how, on in l.joins:
            right = item(l, by_alias[alias], alias)
            rel = rel.join(right, pred(on)) if how == "inner" else rel.left(right, pred(on))
        for atom in l.atoms:
            if atom.kind == "plain":
                rel = rel.filter(pred((atom,)))
            elif atom.kind == "scalar":
                written = pred((atom,))
                # a correlated subquery runs once per outer row: its atom costs its input's rows per probe
                facts.append(set_cost(written, int(min(inner_rows(atom.sub), 1e12))))
                plain = rel.filter(written)
                alt = decorrelate.scalar_aggregate(atom, _fresh(taken, "dc")) if holds(decorrelate, l.dialect) \
                    else None
                if isinstance(alt, decorrelate.Decorrelated):
                    derived = Rel.derived(alt.sql, alt.alias)
                    facts.append(set_(rows_fn(derived)).to(max(1.0, DERIVED_ROWS * inner_rows(atom.sub))))
                    facts.append(set_(columns(derived)).to(alias_set(frozenset(
                        [f"{alt.alias}.k{n}" for n in range(1, len(alt.on) + 1)] + [f"{alt.alias}.v"]))))
                    if len(alt.on) == 1:  # one row per grouping key
                        facts.append(unique_on(derived, String(f"{alt.alias}.k1")))
                    on, cmp = pred(alt.on), pred((alt.compare,))
                    joined = rel.left(derived, on) if alt.outer else rel.join(derived, on)
                    expansions.append(union(plain).with_(joined.filter(cmp)))
                rel = plain
            elif atom.kind == "not_in":
                written = pred((Atom(atom.sql, atom.refs, frozenset()),))
                # a hashed NOT IN reads its subquery once (rows read and kept, as an anti-join reads its right
                # side), but rescans it per row once it no longer fits work_mem and never gets the anti-join's
                # strategies: priced at twice that, above the anti-join
                facts.append(set_cost(written, int(min(2 * 1.5 * inner_rows(atom.sub) + NOT_IN_PENALTY, 1e12))))
                x, y = atom.detail
                if all(isinstance(c, exp.Column) and c.table for c in (x, y)):
                    # the anti-join it equals where x and y are never NULL (``rules.nulls``; the nullability
                    # analysis decides, from NOT NULL columns and the conditions below)
                    right, corr = subquery(atom.sub)
                    facts.extend([set_(notin_sub(written)).to(right), set_(notin_on(written)).to(corr),
                                  notin_keys(written, String(f"{x.table}.{x.name}"), String(f"{y.table}.{y.name}"))])
                rel = rel.filter(written)
            else:
                right, corr = subquery(atom.sub)
                rel = rel.semi(right, corr) if atom.kind == "exists" else rel.anti(right, corr)
        return rel

    def subquery(sub: Lowered) -> tuple[Rel, Pred]:
        inner = [a for a in sub.atoms if a.refs <= sub.aliases]
        corr = tuple(a for a in sub.atoms if not a.refs <= sub.aliases)
        return core(Lowered(sub.tables, sub.joins, tuple(inner), sub.shell, views=sub.views, dialect=sub.dialect)), pred(corr)

    def top(l: Lowered) -> Rel:
        if l.setop is None:
            return selected(l)
        keyword, left, right = l.setop
        term, found = shell(l, Rel.setop(keyword, top(left), top(right)), groups)
        facts.extend(found)
        return term

    return top(low), facts, expansions


def _all_tables(low: Lowered):
    """(alias, table) of the statement and of all its parts (aliases are unique: see ``lower``)."""
    yield from ((a, t) for t, a in low.tables)
    for part in low.parts():
        yield from _all_tables(part)


def _all_atoms(low: Lowered):
    """Every condition of the statement and of its parts (ON conditions too)."""
    yield from low.atoms
    for _alias, _how, on in low.joins:
        yield from on
    for part in low.parts():
        yield from _all_atoms(part)


def _all_pushes(low: Lowered):
    """(outer atom SQL, the atom it becomes inside the view) of every view of the statement, nested ones too."""
    for view in low.views:
        yield from view.pushes
    for part in low.parts():
        yield from _all_pushes(part)


def _probes(subqueries, select, inner_rows, dialect: str) -> list:
    """What each clause of ``select``'s shell pays per row it reads for the correlated ``subqueries`` it holds: a
    scan of each one's tables (PostgreSQL runs it once per row; an uncorrelated one runs once and costs nothing)."""
    out = []
    for clause, text in clause_texts(select, dialect=dialect).items():
        cost = sum(inner_rows(s.sub) for s in subqueries if s.outer and s.sql in text
                   and s.clause == {"items": "select"}.get(clause, clause))
        if cost:
            out.append(set_(per_row(String(text))).to(float(cost)))
    return out


def _fresh(taken: set[str], stem: str) -> str:
    n = 1
    while f"{stem}{n}" in taken:
        n += 1
    taken.add(f"{stem}{n}")
    return f"{stem}{n}"
