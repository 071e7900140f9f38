"""What is known of the algebra's terms (``optimizers.rewrites.algebra.terms``), as egglog functions and
relations filled by the ``ANALYSES`` ruleset, every rule's guard may read them; and what each e-node costs.

``aliases(rel)``, the aliases a relation's rows carry (a semi or anti join carries its left side's only);
``columns(rel)``, its output columns (``alias.column`` below a select list; a select list's columns:
``sql.shell_operators.output_columns``); ``refs(pred)`` and ``rejects(pred)``; ``rows(rel)``, the estimated row
count (scans' counts, atoms' selectivities and groupings' groups come from the target's statistics, set by the
lowering; the smallest estimate of a class wins); ``unique_on(rel, column)``, a column no two of its rows share (a
scan's one-column unique key, a view's or a grouping's one grouping column, kept by filters, the left side of semi-
and anti-joins and either side of a join that meets at most one row of the other); ``equal_to(pred, column)``, the
aliases the other side of an equality with ``column`` reads; ``pushed(pred)``, a filter above a view as it reads
inside the view (stated by the lowering, where it may move); ``nonnull(rel, column)``, a column no row has NULL
(declared NOT NULL on a scan, or rejected by a condition below: ``strict_on(pred, column)``; lost on a LEFT JOIN's
nullable side); ``per_row(text)``, what the correlated subqueries in a shell clause's text cost per row the clause
reads. Each e-node's extraction cost (``set_cost``: rows read plus rows produced, grouping, DISTINCT and sorting a
price per input row, so extraction prefers plans that shrink relations early, natively, without a Python cost
model) is set by ``COSTS`` inside ``priced``, just for an extraction.
"""

from __future__ import annotations

from contextlib import contextmanager

from egglog import EGraph, Set, String, StringLike, eq, f64, function, relation, rule, ruleset, set_, set_cost, vars_

from optimizers.rewrites.algebra.terms import ALIASES, Pred, Rel

@function(merge=lambda old, new: old)
def aliases(rel: Rel) -> ALIASES: ...


@function(merge=lambda old, new: old)
def refs(pred: Pred) -> ALIASES: ...


@function(merge=lambda old, new: old)
def rejects(pred: Pred) -> ALIASES: ...


@function(merge=lambda old, new: old.min(new))
def rows(rel: Rel) -> f64: ...


@function(merge=lambda old, new: old.min(new))
def selectivity(pred: Pred) -> f64: ...


@function(merge=lambda old, new: old)
def equal_to(pred: Pred, column: StringLike) -> ALIASES: ...


@function(merge=lambda old, new: old)
def pushed(pred: Pred) -> Pred: ...


@function(merge=lambda old, new: old)
def columns(rel: Rel) -> ALIASES: ...  # the relation's output columns (``alias.column``, or a SELECT's names)


@function(merge=lambda old, new: old.min(new))
def group_share(keys: StringLike, having: StringLike) -> f64: ...  # a grouping's rows per input row


@function(merge=lambda old, new: old.min(new))
def limit_cap(clause: StringLike) -> f64: ...


@function(merge=lambda old, new: old.max(new))
def per_row(text: StringLike) -> f64: ...  # a shell clause's correlated subqueries: their cost per row it reads


@function(merge=lambda old, new: old)
def notin_sub(pred: Pred) -> Rel: ...


@function(merge=lambda old, new: old)
def notin_on(pred: Pred) -> Pred: ...


unique_on = relation("unique_on", Rel, String)
keyed_view = relation("keyed_view", String, String)
group_key = relation("group_key", String, String)  # GROUP BY of one column: the grouping's text, the column
row_by_row = relation("row_by_row", String)  # a select list (by its text) that gives one row per input row
unordered = relation("unordered", String)  # a view (by its text) whose rows' order the query around it ignores
sinks = relation("sinks", Pred)  # a filter moved into a view: it may pass the view's shell (``rules.views``)
nonnull = relation("nonnull", Rel, String)  # no row of the relation has the column NULL
strict_on = relation("strict_on", Pred, String)  # the predicate is not true where the column is NULL
notin_keys = relation("notin_keys", Pred, String, String)  # x NOT IN (SELECT y ...): its x and y columns


a, b, r = vars_("a b r", Rel)
p, q, x = vars_("p q x", Pred)
s, t, w = vars_("s t w", String)
S1, S2, S3, S4 = vars_("S1 S2 S3 S4", ALIASES)
n1, n2, k1, k2 = vars_("n1 n2 k1 k2", f64)



GROUP_WEIGHT = 2.0  # the cost of grouping (or DISTINCT) per input row, beyond reading it: hashing or sorting it
SORT_WEIGHT = 2.0
DISTINCT_ROWS = 0.5  # a DISTINCT's rows per input row, without better knowledge
NONE = Set[String].empty()
COST_CAP = 1e15  # an e-node's cost at most (a tree of a few thousand nodes stays within i64)


def _cost(value):
    return (value.min(f64(COST_CAP)) + 1.0).to_i64()


ANALYSES = ruleset(
    rule(eq(r).to(Rel.scan(s, t))).then(set_(aliases(r)).to(Set(t))),
    rule(eq(r).to(Rel.derived(s, t))).then(set_(aliases(r)).to(Set(t))),
    rule(eq(r).to(Rel.view(a, t, w))).then(set_(aliases(r)).to(Set(t))),
    # keys: a view's from its shell, a grouping's on its one column, kept by a filter, by the left side of a semi-
    # or anti-join, and by either side of a join that meets at most one row of the other (its condition equates
    # a key of the other side with values that read nothing of it)
    rule(eq(r).to(Rel.view(a, t, w)), keyed_view(w, s)).then(unique_on(r, s)),
    rule(eq(r).to(a.group(s, t)), group_key(s, w)).then(unique_on(r, w)),
    rule(eq(r).to(a.filter(p)), unique_on(a, s)).then(unique_on(r, s)),
    rule(eq(r).to(a.semi(b, p)), unique_on(a, s)).then(unique_on(r, s)),
    rule(eq(r).to(a.anti(b, p)), unique_on(a, s)).then(unique_on(r, s)),
    rule(eq(r).to(a.join(b, p)), unique_on(a, s), eq(S1).to(equal_to(p, w)), unique_on(b, w), eq(S2).to(aliases(b)),
         eq(S1 & S2).to(NONE)).then(unique_on(r, s)),
    rule(eq(r).to(a.join(b, p)), unique_on(b, s), eq(S1).to(equal_to(p, w)), unique_on(a, w), eq(S2).to(aliases(a)),
         eq(S1 & S2).to(NONE)).then(unique_on(r, s)),
    rule(eq(x).to(Pred.both(p, q)), eq(S1).to(equal_to(p, s))).then(set_(equal_to(x, s)).to(S1)),
    rule(eq(x).to(Pred.both(p, q)), eq(S1).to(equal_to(q, s))).then(set_(equal_to(x, s)).to(S1)),
    # nullability: columns declared NOT NULL (set on scans), and those a condition below rejects the NULLs of;
    # a LEFT JOIN's nullable side and a semi- or anti-join's right side lose theirs
    rule(eq(x).to(Pred.both(p, q)), strict_on(p, s)).then(strict_on(x, s)),
    rule(eq(x).to(Pred.both(p, q)), strict_on(q, s)).then(strict_on(x, s)),
    rule(eq(r).to(a.filter(p)), nonnull(a, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.filter(p)), strict_on(p, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.join(b, p)), nonnull(a, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.join(b, p)), nonnull(b, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.join(b, p)), strict_on(p, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.left(b, p)), nonnull(a, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.semi(b, p)), nonnull(a, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.anti(b, p)), nonnull(a, s)).then(nonnull(r, s)),
    rule(eq(r).to(a.filter(p)), eq(S1).to(aliases(a))).then(set_(aliases(r)).to(S1)),
    rule(eq(r).to(a.join(b, p)), eq(S1).to(aliases(a)), eq(S2).to(aliases(b))).then(set_(aliases(r)).to(S1 | S2)),
    rule(eq(r).to(a.left(b, p)), eq(S1).to(aliases(a)), eq(S2).to(aliases(b))).then(set_(aliases(r)).to(S1 | S2)),
    rule(eq(r).to(a.semi(b, p)), eq(S1).to(aliases(a))).then(set_(aliases(r)).to(S1)),
    rule(eq(r).to(a.anti(b, p)), eq(S1).to(aliases(a))).then(set_(aliases(r)).to(S1)),
    rule(eq(x).to(Pred.atom(s, S1, S2))).then(set_(refs(x)).to(S1), set_(rejects(x)).to(S2)),
    rule(eq(x).to(Pred.both(p, q)), eq(S1).to(refs(p)), eq(S2).to(refs(q)), eq(S3).to(rejects(p)),
         eq(S4).to(rejects(q))).then(set_(refs(x)).to(S1 | S2), set_(rejects(x)).to(S3 | S4)),
    rule(eq(x).to(Pred.both(p, q)), eq(k1).to(selectivity(p)), eq(k2).to(selectivity(q))).then(
        set_(selectivity(x)).to(k1 * k2)),
    # row estimates: the smallest estimate of a class wins
    rule(eq(r).to(a.filter(p)), eq(n1).to(rows(a)), eq(k1).to(selectivity(p))).then(set_(rows(r)).to(n1 * k1)),
    rule(eq(r).to(a.join(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_(rows(r)).to(n1 * n2 * k1)),
    rule(eq(r).to(a.left(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_(rows(r)).to((n1 * n2 * k1).max(n1))),
    rule(eq(r).to(a.semi(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_(rows(r)).to(n1 * (n2 * k1).min(f64(1.0)))),
    rule(eq(r).to(a.anti(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_(rows(r)).to(n1 * (f64(1.0) - (n2 * k1).min(f64(0.9))))),
    rule(eq(r).to(Rel.view(a, t, w)), eq(n1).to(rows(a))).then(set_(rows(r)).to(n1)),
    rule(eq(r).to(a.group(s, t)), eq(n1).to(rows(a)), eq(k1).to(group_share(s, t))).then(
        set_(rows(r)).to((n1 * k1).max(f64(1.0)))),
    rule(eq(r).to(a.project(s)), eq(n1).to(rows(a))).then(set_(rows(r)).to(n1)),
    rule(eq(r).to(a.sort(s)), eq(n1).to(rows(a))).then(set_(rows(r)).to(n1)),
    rule(eq(r).to(a.distinct(s)), eq(n1).to(rows(a))).then(set_(rows(r)).to((n1 * DISTINCT_ROWS).max(f64(1.0)))),
    rule(eq(r).to(a.limit(s)), eq(n1).to(rows(a)), eq(k1).to(limit_cap(s))).then(set_(rows(r)).to(n1.min(k1))),
    # output columns: a scan's, a view's and a SELECT's are stated by the lowering; the others pass theirs on
    rule(eq(r).to(a.filter(p)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.join(b, p)), eq(S1).to(columns(a)), eq(S2).to(columns(b))).then(set_(columns(r)).to(S1 | S2)),
    rule(eq(r).to(a.left(b, p)), eq(S1).to(columns(a)), eq(S2).to(columns(b))).then(set_(columns(r)).to(S1 | S2)),
    rule(eq(r).to(a.semi(b, p)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.anti(b, p)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.group(s, t)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.sort(s)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.distinct(s)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(a.limit(s)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(Rel.setop(s, a, b)), eq(S1).to(columns(a))).then(set_(columns(r)).to(S1)),
    rule(eq(r).to(Rel.setop(s, a, b)), eq(n1).to(rows(a)), eq(n2).to(rows(b))).then(set_(rows(r)).to(n1 + n2)),
    name="analyses",
)

# each e-node's extraction cost: rows read plus rows produced. egglog's cost table cannot change a cost once set,
# while a class's row estimate may still fall as the search adds cheaper forms, so costs are set only inside
# ``priced`` (a pushed copy of the graph, popped after the extraction), from the estimates of that moment
COSTS = ruleset(
    rule(eq(r).to(a.filter(p)), eq(n1).to(rows(a)), eq(k1).to(selectivity(p))).then(
        set_cost(a.filter(p), _cost(n1 + n1 * k1))),
    rule(eq(r).to(a.join(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_cost(a.join(b, p), _cost(n1 + n2 + n1 * n2 * k1))),
    rule(eq(r).to(a.left(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b)), eq(k1).to(selectivity(p))).then(
        set_cost(a.left(b, p), _cost(n1 + n2 + (n1 * n2 * k1).max(n1)))),
    rule(eq(r).to(a.semi(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b))).then(
        set_cost(a.semi(b, p), _cost(n1 + n2 + n1))),
    rule(eq(r).to(a.anti(b, p)), eq(n1).to(rows(a)), eq(n2).to(rows(b))).then(
        set_cost(a.anti(b, p), _cost(n1 + n2 + n1))),
    rule(eq(r).to(Rel.view(a, t, w)), eq(n1).to(rows(a))).then(set_cost(Rel.view(a, t, w), _cost(n1))),
    # grouping and DISTINCT hash or sort each input row, ORDER BY sorts them (a LIMIT costs 1)
    # a clause's correlated subqueries run once per row it reads (a select list's and an ORDER BY's per input row,
    # a HAVING's per group): ``per_row``, stated for every clause's text by the lowering of its shell
    rule(eq(r).to(a.group(s, t)), eq(n1).to(rows(a)), eq(k1).to(group_share(s, t)), eq(k2).to(per_row(t))).then(
        set_cost(a.group(s, t), _cost(n1 * GROUP_WEIGHT + n1 * k1 + (n1 * k1).max(f64(1.0)) * k2))),
    rule(eq(r).to(a.distinct(s)), eq(n1).to(rows(a))).then(
        set_cost(a.distinct(s), _cost(n1 * GROUP_WEIGHT + n1 * DISTINCT_ROWS))),
    rule(eq(r).to(a.sort(s)), eq(n1).to(rows(a)), eq(k1).to(per_row(s))).then(
        set_cost(a.sort(s), _cost(n1 * SORT_WEIGHT + n1 * k1))),
    rule(eq(r).to(a.project(s)), eq(n1).to(rows(a)), eq(k1).to(per_row(s))).then(
        set_cost(a.project(s), _cost(n1 * k1))),
    rule(eq(r).to(Rel.setop(s, a, b)), eq(n1).to(rows(a)), eq(n2).to(rows(b))).then(
        set_cost(Rel.setop(s, a, b), _cost(n1 + n2))),
    name="costs",
)


@contextmanager
def priced(egraph: EGraph):
    """``egraph`` with every e-node's cost set from the current row estimates, for an extraction inside the
    ``with``; the costs are gone afterwards (see ``COSTS``)."""
    egraph.push()
    try:
        egraph.run(1, ruleset=COSTS)
        yield egraph
    finally:
        egraph.pop()


ANALYSIS_ROUNDS = 12  # passes of the analyses after a move (they reach a fixed point well before on 30 joins)


ANALYSIS_BATCH = 3  # passes per call: each call pays egglog's translation of the ruleset once


def analyse(egraph: EGraph, rounds: int = ANALYSIS_ROUNDS) -> None:
    """Run the analyses to a fixed point (at most ``rounds`` passes, in batches; they only fill facts, never add
    nodes)."""
    for _ in range(0, rounds, ANALYSIS_BATCH):
        if not egraph.run(ANALYSES * ANALYSIS_BATCH).updated:
            return
