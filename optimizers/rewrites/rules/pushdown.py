"""Predicate pushdown: conjunctions split, filters moved below the joins whose one side holds every column they
read. Below an inner join either side; below a LEFT, semi or anti join only the preserved (left) side (a filter
on the nullable side of a LEFT JOIN would turn its NULL-extended rows into dropped ones)."""

from __future__ import annotations

from egglog import Set, String, eq, rewrite, rule, union, vars_

from optimizers.rewrites.algebra.analyses import aliases, refs
from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.rules.base import EVERY_DIALECT, Rule

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

a, b, r = vars_("a b r", Rel)
p, q, on = vars_("p q on", Pred)
S1, S2 = vars_("S1 S2", Set[String])
NONE = Set[String].empty()


def _below(op, name: str, side: str, doc: str) -> Rule:
    """filter(op(a, b, on), q) -> op(filter(a, q), b, on) (``side`` "left") or op(a, filter(b, q), on) ("right")
    when every alias ``q`` reads is carried by that side."""
    kept = a if side == "left" else b
    target = op(a.filter(q), b, on) if side == "left" else op(a, b.filter(q), on)
    return Rule.of(name, doc, rule(eq(r).to(op(a, b, on).filter(q)), eq(S1).to(refs(q)), eq(S2).to(aliases(kept)),
                                   eq(S1 - S2).to(NONE)).then(union(r).with_(target)))


PUSHDOWN_RULES = (
    Rule.of("split_conjunction", "filter(a, p AND q) -> filter(filter(a, p), q): each conjunct moves on its own",
            rewrite(a.filter(Pred.both(p, q))).to(a.filter(p).filter(q))),
    Rule.of("swap_filters", "filter(filter(a, p), q) -> filter(filter(a, q), p): the order of filters is free",
            rewrite(a.filter(p).filter(q)).to(a.filter(q).filter(p))),
    _below(Rel.join, "push_filter_join_left", "left",
           "a filter reading only the left side of an inner join is applied before the join"),
    _below(Rel.join, "push_filter_join_right", "right",
           "a filter reading only the right side of an inner join is applied before the join"),
    _below(Rel.left, "push_filter_left_join_preserved", "left",
           "a filter reading only the preserved side of a LEFT JOIN is applied before it (never the nullable side)"),
    _below(Rel.semi, "push_filter_semi_join", "left",
           "a filter on the outer side of an EXISTS is applied before the semi-join"),
    _below(Rel.anti, "push_filter_anti_join", "left",
           "a filter on the outer side of a NOT EXISTS is applied before the anti-join"),
)


def _on_to_right(op, name: str, doc: str) -> Rule:
    """op(a, b, p AND q) -> op(a, filter(b, q), p) when ``q`` reads only ``b``'s aliases."""
    return Rule.of(name, doc, rule(eq(r).to(op(a, b, Pred.both(p, q))), eq(S1).to(refs(q)), eq(S2).to(aliases(b)),
                                   eq(S1 - S2).to(NONE)).then(union(r).with_(op(a, b.filter(q), p))))


ON_RULES = (
    _on_to_right(Rel.join, "join_condition_to_right_filter",
                 "a condition of an inner join's ON that reads only its right side filters that side first"),
    _on_to_right(Rel.left, "left_join_condition_to_right_filter",
                 "a LEFT JOIN's ON condition on the nullable side alone filters that side before the join (rows "
                 "of the left side are kept either way)"),
    _on_to_right(Rel.semi, "semi_join_condition_to_subquery",
                 "an EXISTS condition that reads only the subquery's tables filters them first"),
    _on_to_right(Rel.anti, "anti_join_condition_to_subquery",
                 "a NOT EXISTS condition that reads only the subquery's tables filters them first"),
    Rule.of("pull_filter_above_join", "join(filter(a, q), b, p) -> filter(join(a, b, p), q): the inverse of a "
            "pushdown, so a filter can meet a join condition or travel to the other side",
            rewrite(a.filter(q).join(b, p)).to(a.join(b, p).filter(q))),
    Rule.of("drop_true_filter", "filter(a, TRUE) -> a",
            rewrite(a.filter(Pred.atom("TRUE", NONE, NONE))).to(a)),
    Rule.of("drop_repeated_filter", "filter(filter(a, p), p) -> filter(a, p): a conjunct written twice (ORMs "
            "and view expansion repeat them) is evaluated once",
            rewrite(a.filter(p).filter(p)).to(a.filter(p))),
    Rule.of("drop_repeated_exists", "semi(semi(a, b, p), b, p) -> semi(a, b, p): the same EXISTS twice",
            rewrite(a.semi(b, p).semi(b, p)).to(a.semi(b, p))),
)
