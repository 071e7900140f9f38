"""Statement-level rules: rewrites of a whole statement that need what the e-graph's core does not hold (the shell's
select list and which tables the statement reads at all, across the whole statement) and the catalog's key facts.
Each is a small named unit, a function from a SELECT's syntax tree and the ``Facts`` to a new tree or None, listed
in order in ``STATEMENT_RULES``; the optimizers' base applies them to every candidate form (``variants``). A rule
marked ``alternative`` adds its form beside the one it rewrites (the planner's re-ranking decides); the others
replace it.

>>> facts = Facts({"c": {"id": "int", "name": "text"}, "o": {"id": "int", "cid": "int", "v": "int"}},
...               frozenset({("c", "id"), ("o", "id"), ("o", "cid")}), {"c": (("id",),), "o": (("id",),)},
...               (("o", ("cid",), "c", ("id",)),), dialect="postgres")
>>> variants("SELECT o.id FROM o JOIN c ON c.id = o.cid WHERE o.v > 1", facts)[0]
('SELECT o.id FROM o WHERE o.v > 1', ('drop_join_on_foreign_key',))
>>> variants("SELECT o.v FROM o WHERE o.v = 1 OR o.cid = 2", facts)[1][0]
'SELECT o.v FROM o WHERE o.v = 1 UNION ALL SELECT o.v FROM o WHERE o.cid = 2 AND (o.v = 1) IS NOT TRUE'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from optimizers.rewrites.rules import ctes, eager, or_split, semijoins, unions, windows
from optimizers.rewrites.rules.base import EVERY_DIALECT, Dialects, Facts
from optimizers.rewrites.rules.simplify import DIALECTS as SIMPLIFY_DIALECTS, simplify_predicates
from optimizers.rewrites.rules.syntax import inside

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)


@dataclass(frozen=True)
class StatementRule:
    name: str
    doc: str
    apply: Callable[[exp.Select, Facts], exp.Select | exp.Union | None]
    alternative: bool = False
    dialects: Dialects = DIALECTS  # where it holds: its module's ``DIALECTS``


def _sources(tree: exp.Select) -> list[tuple[str, str, exp.Join | None]] | None:
    """(table, alias, its join or None for FROM) of a SELECT over base tables only; None otherwise."""
    from_ = tree.args.get("from_")
    if from_ is None or not isinstance(from_.this, exp.Table):
        return None
    out = [(from_.this.name, from_.this.alias_or_name, None)]
    for join in tree.args.get("joins") or ():
        if not isinstance(join.this, exp.Table) or join.side not in ("", "LEFT") or join.args.get("using"):
            return None
        out.append((join.this.name, join.this.alias_or_name, join))
    return out


def _owner(col: exp.Column, sources, facts: Facts) -> str | None:
    """The alias a column belongs to (its qualifier, else the one source whose table has that column)."""
    if col.table:
        return col.table
    owners = [alias for table, alias, _ in sources if col.name in facts.schema.get(table, {})]
    return owners[0] if len(owners) == 1 else None


def _unused_join(tree: exp.Select, facts: Facts):
    """(sources, index, the join's equalities as (its column, the other side)) of the first inner join whose
    table nothing outside its ON reads, with its ON a conjunction of equalities ``alias.col = expr``."""
    sources = _sources(tree)
    if sources is None:
        return None
    for i, (table, alias, join) in enumerate(sources):
        if join is None or join.side or not join.args.get("on"):
            continue
        used = [c for c in tree.find_all(exp.Column) if not inside(c, join)]
        if any(_owner(c, sources, facts) in (alias, None) for c in used):
            continue
        pairs = []
        for conj in join.args["on"].flatten() if isinstance(join.args["on"], exp.And) else [join.args["on"]]:
            if not isinstance(conj, exp.EQ):
                pairs = None
                break
            left, right = conj.this, conj.expression
            if isinstance(right, exp.Column) and right.table == alias:
                left, right = right, left
            if not (isinstance(left, exp.Column) and left.table == alias) or any(
                    c.table == alias for c in right.find_all(exp.Column)):
                pairs = None
                break
            pairs.append((left.name, right))
        if pairs:
            return sources, i, pairs
    return None


def drop_join_on_foreign_key(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """An inner join to a table nothing else reads, on its whole unique key, from NOT NULL columns holding a
    foreign key to that key: every row finds exactly one match, so the join changes nothing."""
    found = _unused_join(tree, facts)
    if found is None:
        return None
    sources, i, pairs = found
    table, alias, join = sources[i]
    if not all(isinstance(other, exp.Column) and other.table for _, other in pairs):
        return None
    key = tuple(c for c, _ in pairs)
    ref = {other.table for _, other in pairs}
    if len(ref) != 1 or sorted(key) not in [sorted(k) for k in facts.keys.get(table, ())]:
        return None
    child = next(t for t, a, _ in sources if a == next(iter(ref)))
    cols = tuple(other.name for _, other in pairs)
    for fk_table, fk_cols, ref_table, ref_cols in facts.foreign_keys:
        if fk_table == child and ref_table == table and sorted(zip(fk_cols, ref_cols)) == sorted(zip(cols, key)) \
                and all((child, c) in facts.not_null for c in fk_cols):
            new = tree.copy()
            new.args["joins"].pop(i - 1)
            if not new.args["joins"]:
                new.set("joins", None)
            return new
    return None


def join_on_key_to_exists(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """An inner join to a table nothing else reads, on equalities covering one of its unique keys: each row finds
    at most one match, so the join is a semi-join, written EXISTS."""
    found = _unused_join(tree, facts)
    if found is None:
        return None
    sources, i, pairs = found
    table, alias, join = sources[i]
    cols = {c for c, _ in pairs}
    if not any(set(k) <= cols for k in facts.keys.get(table, ())):
        return None
    new = tree.copy()
    on = new.args["joins"][i - 1].args["on"]
    new.args["joins"].pop(i - 1)
    if not new.args["joins"]:
        new.set("joins", None)
    sub = exp.select("1").from_(exp.to_table(table).as_(alias) if alias != table else exp.to_table(table)).where(on)
    return new.where(exp.Exists(this=sub), copy=False)


# what may make a select item change how many rows its SELECT returns (a set-returning function; an unknown
# function may be one), or read rows of its own: such an item is never dropped
_KEEPS_ROWS = (exp.Anonymous, exp.UDTF, exp.Unnest, exp.Explode, exp.GenerateSeries, exp.Window, exp.Subquery,
               exp.Select)


def prune_derived_columns(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """Projection pruning: the select items of a derived table in FROM that nothing outside it reads are dropped.
    Only from a SELECT without DISTINCT or positional GROUP BY / ORDER BY, only items that cannot change how many
    rows it returns (no set-returning, unknown or window function, no subquery) and that its own GROUP BY / ORDER BY
    do not name, and one item always stays; the statement around must read the derived table's columns by name
    only (no ``*``, no whole-row reference, no USING or NATURAL join), and an unqualified column of the same name
    counts as a read."""
    if any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
           for e in tree.expressions) or any(
            j.args.get("using") or j.args.get("method") for j in tree.args.get("joins") or ()):
        return None
    new, changed = tree.copy(), False
    for sub in [new.args["from_"].this if new.args.get("from_") else None,
                *(j.this for j in new.args.get("joins") or ())]:
        inner = sub.this if isinstance(sub, exp.Subquery) else None
        alias = sub.args.get("alias") if inner is not None else None
        if not isinstance(inner, exp.Select) or alias is None or alias.columns or inner.args.get("distinct"):
            continue
        ordered = [*(inner.args["group"].expressions if inner.args.get("group") else ()),
                   *(o.this for o in (inner.args["order"].expressions if inner.args.get("order") else ()))]
        if any(isinstance(e, exp.Literal) for e in ordered):
            continue
        around = [c for c in new.find_all(exp.Column) if not inside(c, sub) and c.table in (alias.name, "")]
        if any(isinstance(c.this, exp.Star) or not c.table and c.name == alias.name for c in around):
            continue  # a whole-row reference (``to_json(s)``, ``s.*`` in a call) reads every column
        read = {c.name for c in around}
        read |= {c.name for e in ordered for c in e.find_all(exp.Column) if not c.table}
        kept = [e for e in inner.expressions if e.alias_or_name in read or any(e.find_all(*_KEEPS_ROWS))]
        kept = kept or inner.expressions[:1]
        if len(kept) < len(inner.expressions):
            inner.set("expressions", kept)
            changed = True
    return new if changed else None


def or_to_union_all(tree: exp.Select, facts: Facts) -> exp.Union | None:
    """A WHERE with an OR of predicates, in a SELECT without DISTINCT, grouping, aggregates, order or limit: one
    branch per predicate, each keeping only rows the earlier predicates did not take (``(p) IS NOT TRUE``), joined
    with UNION ALL (each branch can use its own index)."""
    where = tree.args.get("where")
    if where is None or any(tree.args.get(k) for k in ("distinct", "group", "having", "order", "limit", "offset")):
        return None
    if any(e.find(exp.AggFunc, exp.Window) for e in tree.expressions):
        return None
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    ors = [c for c in conjuncts if isinstance(c.unnest(), exp.Or)]
    if len(ors) != 1:
        return None
    branches = list(ors[0].unnest().flatten())
    rest = [c for c in conjuncts if c is not ors[0]]
    selects = []
    for k, branch in enumerate(branches):
        guard = [exp.Is(this=exp.Paren(this=b.copy()), expression=exp.Not(this=exp.true())) for b in branches[:k]]
        cond = exp.and_(*[c.copy() for c in rest], branch.copy(), *guard)
        selects.append(tree.copy().where(cond, append=False, copy=False))
    out = selects[0]
    for s in selects[1:]:
        out = exp.union(out, s, distinct=False)
    return out


STATEMENT_RULES: tuple[StatementRule, ...] = (
    StatementRule("simplify_predicates", simplify_predicates.__doc__ or "", simplify_predicates,
                  dialects=SIMPLIFY_DIALECTS),
    StatementRule("prune_derived_columns", prune_derived_columns.__doc__ or "", prune_derived_columns),
    StatementRule("drop_join_on_foreign_key", drop_join_on_foreign_key.__doc__ or "", drop_join_on_foreign_key),
    StatementRule("join_on_key_to_exists", join_on_key_to_exists.__doc__ or "", join_on_key_to_exists,
                  alternative=True),
    StatementRule("or_to_union_all", or_to_union_all.__doc__ or "", or_to_union_all, alternative=True),
    # the shapes beyond decorrelation, each its module: alternatives, which the planner's re-ranking and the race
    # on the shadow take or leave
    StatementRule("correlated_in_to_exists", semijoins.correlated_in_to_exists.__doc__ or "",
                  semijoins.correlated_in_to_exists, alternative=True, dialects=semijoins.DIALECTS),
    StatementRule("exists_to_left_join", semijoins.exists_to_left_join.__doc__ or "",
                  semijoins.exists_to_left_join, alternative=True, dialects=semijoins.DIALECTS),
    StatementRule("not_in_to_not_exists", semijoins.not_in_to_not_exists.__doc__ or "",
                  semijoins.not_in_to_not_exists, alternative=True, dialects=semijoins.DIALECTS),
    StatementRule("or_split", or_split.or_split.__doc__ or "", or_split.or_split, alternative=True,
                  dialects=or_split.DIALECTS),
    StatementRule("eager_aggregate", eager.eager_aggregate.__doc__ or "", eager.eager_aggregate, alternative=True,
                  dialects=eager.DIALECTS),
    StatementRule("window_joinback", windows.window_joinback.__doc__ or "", windows.window_joinback,
                  alternative=True, dialects=windows.DIALECTS),
    StatementRule("push_into_unions", unions.push_into_unions.__doc__ or "", unions.push_into_unions,
                  alternative=True, dialects=unions.DIALECTS),
)

# a statement's WITH (``rules.ctes``): the readings' filters pushed into a CTE read twice or more (an alternative
# of its own), and the CTEs so read written as derived tables, which the rules above then take on (they see only
# tables of the catalog in FROM)
PUSH = StatementRule("push_into_ctes", ctes.push_into_ctes.__doc__ or "", ctes.push_into_ctes, alternative=True,
                     dialects=ctes.DIALECTS)
INLINE = StatementRule("inline_ctes", ctes.inline_ctes.__doc__ or "", ctes.inline_ctes,
                       dialects=ctes.DIALECTS)
# the rules of a statement that is a set operation (the rules above take a SELECT)
SET_OPERATION_RULES = (StatementRule("union_to_or", unions.union_to_or.__doc__ or "", unions.union_to_or,
                                     alternative=True, dialects=unions.DIALECTS),)
# the rules that also read a WITH themselves (a CTE joined back read once; a UNION CTE's readings' filters)
WITH_ALTERNATIVES = tuple(r for r in STATEMENT_RULES if r.name in ("window_joinback", "push_into_unions"))


def variants(sql: str, facts: Facts) -> list[tuple[str, tuple[str, ...]]]:
    """``sql`` after the replacing rules, then each alternative rule's form of that: (SQL, rules applied). A
    statement with a WITH clause gets the readings' filters pushed into its CTEs (``push_into_ctes``, and into a
    UNION CTE's branches: ``push_into_unions``, beside; a CTE joined back, read once: ``window_joinback``) and its
    CTEs read twice or more written as derived tables (``inline_ctes``); one with a WITH left is not rewritten
    further: the rules take a name in FROM for the catalog's table, and a CTE may shadow one (``WITH orders AS
    (...)``: its rows need not honour the table's keys). Read and written in
    ``facts.dialect``; a rule applies only in a dialect it holds in (its ``dialects``, its module's ``DIALECTS``)."""
    try:
        tree = sqlglot.parse_one(sql, read=facts.dialect)
    except SqlglotError:
        return [(sql, ())]
    applied: tuple[str, ...] = ()
    alternatives = []
    if tree.args.get("with_"):
        pushed = PUSH.apply(tree, facts) if isinstance(tree, exp.Select) else None
        if pushed is not None:
            alternatives.append((pushed, (PUSH.name,)))
        for rule in WITH_ALTERNATIVES if isinstance(tree, exp.Select) else ():
            found = rule.apply(tree, facts) if rule.dialects.why_not(facts.dialect) is None else None
            if found is not None:
                alternatives.append((found, (rule.name,)))
        tree = INLINE.apply(tree, facts) if isinstance(tree, exp.Select) else None
        if tree is None or tree.args.get("with_"):
            return [(sql, ())] + [(t.sql(dialect=facts.dialect), names) for t, names in alternatives]
        applied = (INLINE.name,)
    for rule in SET_OPERATION_RULES if isinstance(tree, exp.Union) else ():
        found = rule.apply(tree, facts) if rule.dialects.why_not(facts.dialect) is None else None
        if found is not None:
            alternatives.append((found, applied + (rule.name,)))
    for rule in STATEMENT_RULES:
        if not isinstance(tree, exp.Select):
            break
        if rule.dialects.why_not(facts.dialect) is not None:
            continue
        new = rule.apply(tree, facts)
        if new is None:
            continue
        if rule.alternative:
            alternatives.append((new, applied + (rule.name,)))
        else:
            tree, applied = new, applied + (rule.name,)
    main = tree.sql(dialect=facts.dialect) if applied else sql
    return [(main, applied)] + [(t.sql(dialect=facts.dialect), names) for t, names in alternatives]
