"""Golden tests of the rewrite rules: per rule, an input term, the term it must become equal to, and where the
rule is guarded, an input it must leave alone (the rewrite that would change the statement's meaning)."""

import pytest
from egglog import EGraph, eq

from optimizers.rewrites.algebra import ANALYSES, Pred, Rel, alias_set
from optimizers.rewrites.rules import RULES, by_name

T, U, V = Rel.scan("t", "t"), Rel.scan("u", "u"), Rel.scan("v", "v")


def atom(sql: str, *refs: str, strict: bool = True) -> Pred:
    return Pred.atom(sql, alias_set(frozenset(refs)), alias_set(frozenset(refs) if strict else frozenset()))


TU = atom("t.a = u.c", "t", "u")
UV = atom("u.c = v.e", "u", "v")
TB = atom("t.b > 1", "t")
UD = atom("u.d = 'x'", "u")
UNULL = atom("u.d IS NULL", "u", strict=False)
TV = atom("t.a = v.e", "t", "v")


def rewritten(rule: str, term: Rel, times: int = 1) -> EGraph:
    g = EGraph()
    g.let("root", term)
    for _ in range(times):
        for _ in range(8):
            g.run(1, ruleset=ANALYSES)
        g.run(1, ruleset=by_name(rule).rules)
    return g


GOLDEN = [
    ("split_conjunction", T.filter(Pred.both(TB, atom("t.a < 9", "t"))),
     T.filter(TB).filter(atom("t.a < 9", "t"))),
    ("swap_filters", T.filter(TB).filter(atom("t.a < 9", "t")), T.filter(atom("t.a < 9", "t")).filter(TB)),
    ("push_filter_join_left", T.join(U, TU).filter(TB), T.filter(TB).join(U, TU)),
    ("push_filter_join_right", T.join(U, TU).filter(UD), T.join(U.filter(UD), TU)),
    ("push_filter_left_join_preserved", T.left(U, TU).filter(TB), T.filter(TB).left(U, TU)),
    ("push_filter_semi_join", T.semi(U, TU).filter(TB), T.filter(TB).semi(U, TU)),
    ("push_filter_anti_join", T.anti(U, TU).filter(TB), T.filter(TB).anti(U, TU)),
    ("left_join_to_inner", T.left(U, TU).filter(UD), T.join(U, TU).filter(UD)),
    ("join_commute", T.join(U, TU), U.join(T, TU)),
    ("join_associate", T.join(U, TU).join(V, UV), T.join(U.join(V, UV), TU)),
    ("filter_into_join", T.join(U, TU).filter(atom("t.b < u.c", "t", "u")),
     T.join(U, Pred.both(TU, atom("t.b < u.c", "t", "u")))),
    ("join_condition_to_right_filter", T.join(U, Pred.both(TU, UD)), T.join(U.filter(UD), TU)),
    ("left_join_condition_to_right_filter", T.left(U, Pred.both(TU, UD)), T.left(U.filter(UD), TU)),
    ("semi_join_condition_to_subquery", T.semi(U, Pred.both(TU, UD)), T.semi(U.filter(UD), TU)),
    ("anti_join_condition_to_subquery", T.anti(U, Pred.both(TU, UD)), T.anti(U.filter(UD), TU)),
    ("pull_filter_above_join", T.filter(TB).join(U, TU), T.join(U, TU).filter(TB)),
    ("drop_true_filter", T.filter(atom("TRUE")).join(U, TU), T.join(U, TU)),
    ("drop_repeated_filter", T.filter(TB).filter(TB), T.filter(TB)),
    ("drop_repeated_exists", T.semi(U, TU).semi(U, TU), T.semi(U, TU)),
]

# (rule, input, the rewrite it must not make): each guard is what keeps the meaning
GUARDED = [
    ("push_filter_join_left", T.join(U, TU).filter(UD), T.filter(UD).join(U, TU)),  # u's column is not in t
    ("push_filter_left_join_preserved", T.left(U, TU).filter(UD), T.left(U.filter(UD), TU)),  # nullable side
    ("push_filter_anti_join", T.anti(U, TU).filter(UD), T.anti(U.filter(UD), TU)),
    ("left_join_to_inner", T.left(U, TU).filter(UNULL), T.join(U, TU).filter(UNULL)),  # IS NULL keeps NULL rows
    ("left_join_to_inner", T.left(U, TU).filter(TB), T.join(U, TU).filter(TB)),  # rejects no NULL of u
    ("join_associate", T.join(U, TU).join(V, TV), T.join(U.join(V, TV), TU)),  # t.a = v.e needs t inside
    ("filter_into_join", T.join(U, TU).filter(TB), T.join(U, Pred.both(TU, TB))),  # one side only: push it
    # a LEFT JOIN's condition on the preserved side must stay in ON: as a filter it would drop rows of t
    ("left_join_condition_to_right_filter", T.left(U, Pred.both(TU, TB)), T.filter(TB).left(U, TU)),
    ("left_join_condition_to_right_filter", T.left(U, Pred.both(TU, TB)), T.left(U.filter(TB), TU)),
    ("anti_join_condition_to_subquery", T.anti(U, Pred.both(TU, TB)), T.anti(U.filter(TB), TU)),
]


@pytest.mark.parametrize("rule,given,expected", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_each_rule_makes_its_rewrite(rule, given, expected):
    g = rewritten(rule, given)
    g.check(eq(g.let("expected", expected)).to(given))


@pytest.mark.parametrize("rule,given,forbidden", GUARDED, ids=[g[0] for g in GUARDED])
def test_a_guarded_rule_leaves_a_meaning_changing_rewrite_alone(rule, given, forbidden):
    g = rewritten(rule, given, times=3)
    g.check_fail(eq(forbidden).to(given))


def test_every_listed_rule_has_a_golden_test_and_a_unique_name():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert set(names) == {g[0] for g in GOLDEN}
    assert all(r.doc for r in RULES)
