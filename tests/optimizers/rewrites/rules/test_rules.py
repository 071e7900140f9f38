"""Golden tests of the rewrite rules: per rule, an input term, the term it must become equal to, and where the
rule is guarded, an input it must leave alone (the rewrite that would change the statement's meaning)."""

import pytest
from egglog import EGraph, String, eq, set_

from optimizers.rewrites.algebra.analyses import (ANALYSES, columns, equal_to, group_key, keyed_view, nonnull,
                                                  notin_keys, notin_on, notin_sub, pushed, row_by_row, strict_on,
                                                  unique_on, unordered)
from optimizers.rewrites.algebra.terms import alias_set, Pred, Rel
from optimizers.rewrites.rules import RULES, by_name

T, U, V = Rel.scan("t", "t"), Rel.scan("u", "u"), Rel.scan("v", "v")
GROUPED = "(SELECT u.c AS c, count(*) AS n FROM u GROUP BY u.c) AS g"
G_SHELL = [("group", "u.c", ""), ("project", "u.c AS c, COUNT(*) AS n")]


def shelled(core: Rel, ops) -> Rel:
    for op, *args in ops:
        core = getattr(core, op)(*args)
    return core


G = Rel.view(shelled(U, G_SHELL), "g", GROUPED)  # grouped by c: unique on g.c


def atom(sql: str, *refs: str, strict: bool = True) -> Pred:
    return Pred.atom(sql, alias_set(frozenset(refs)), alias_set(frozenset(refs) if strict else frozenset()))


TU = atom("t.a = u.c", "t", "u")
UV = atom("u.c = v.e", "u", "v")
TB = atom("t.b > 1", "t")
UD = atom("u.d = 'x'", "u")
UNULL = atom("u.d IS NULL", "u", strict=False)
TV = atom("t.a = v.e", "t", "v")
GC, GN = atom("g.c > 1", "g"), atom("g.n > 1", "g")  # on the grouping column, on the count
TG = atom("g.c = t.a", "t", "g")
UT = atom("u.c = t.a", "t", "u")
USELF = atom("u.c = u.b + t.a", "t", "u")
# what the lowering states: the view's key, the filter it may take inside (g.c > 1 as u.c > 1; g.n > 1 none),
# the columns equalities equate; u is unique on u.c, v on nothing
FACTS = [keyed_view(String(GROUPED), String("g.c")), set_(pushed(GC)).to(atom("u.c > 1", "u")),
         set_(equal_to(TG, "g.c")).to(alias_set(frozenset({"t"}))),
         set_(equal_to(TG, "t.a")).to(alias_set(frozenset({"g"}))),
         set_(equal_to(UT, "u.c")).to(alias_set(frozenset({"t"}))),
         set_(equal_to(USELF, "u.c")).to(alias_set(frozenset({"t", "u"}))),
         set_(equal_to(TV, "v.e")).to(alias_set(frozenset({"t"}))), unique_on(U, String("u.c"))]
# select lists and what they show: u.c is u's NOT NULL key (below), v.e no key, t.b a key that may be NULL
SHOWN = {"u.c, u.d": U, "u.d": U, "v.e": V, "t.b": T, "t.id, u.d": T.join(U, UT), "t.id, v.e": T.join(V, TV)}
FACTS += [set_(columns(rel.project(items))).to(alias_set(frozenset(items.split(", "))))
          for items, rel in SHOWN.items()]
FACTS += [row_by_row(String(items)) for items in [*SHOWN, "v.e, COUNT(*)"]]  # none with a set-returning function
SRF = "u.c, UNNEST(ARRAY[1, 1])"  # two rows per row of u
FACTS.append(set_(columns(U.project(SRF))).to(alias_set(frozenset({"u.c", "unnest"}))))
FACTS += [unique_on(T, String("t.b")), unique_on(T, String("t.id")), nonnull(T, String("t.id")),
          set_(columns(V.group("v.e", "").project("v.e, COUNT(*)"))).to(alias_set(frozenset({"v.e", "count"}))),
          group_key(String("v.e"), String("v.e")), unordered(String("(SELECT u.c FROM u ORDER BY u.c) AS s"))]
# x NOT IN (SELECT y ...): over u (t.a and u.c declared NOT NULL), over v (v.e nullable), over v filtered by a
# condition that rejects v.e's NULLs
NU, NV, NW = (atom(f"t.a NOT IN (SELECT {y} FROM {b})", "t", strict=False)
              for y, b in (("u.c", "u"), ("v.e", "v"), ("v.e", "v WHERE v.e > 0")))
VPOS = atom("v.e > 0", "v")
FACTS += [nonnull(T, String("t.a")), nonnull(U, String("u.c")), strict_on(VPOS, String("v.e"))]
for notin, sub, on, y in ((NU, U, UT, "u.c"), (NV, V, TV, "v.e"), (NW, V.filter(VPOS), TV, "v.e")):
    FACTS += [set_(notin_sub(notin)).to(sub), set_(notin_on(notin)).to(on), notin_keys(notin, String("t.a"), String(y))]


def rewritten(rule: str, term: Rel, times: int = 1) -> EGraph:
    g = EGraph()
    g.let("root", term)
    g.register(*FACTS)
    for _ in range(times):
        for _ in range(8):
            g.run(1, ruleset=ANALYSES)
        g.run(by_name(rule).rules * by_name(rule).repeat)
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
    # into the view, then down past its select list and grouping to its core
    ("filter_into_view", G.filter(GC), Rel.view(shelled(U.filter(atom("u.c > 1", "u")), G_SHELL), "g", GROUPED)),
    ("semi_join_to_join_on_key", T.semi(G, TG), T.join(G, TG)),
    ("semi_join_to_join_on_key", T.semi(U.filter(UD), UT), T.join(U.filter(UD), UT)),  # a key kept by a filter
    ("not_in_to_anti_join", T.filter(NU), T.anti(U, UT)),
    ("not_in_to_anti_join", T.filter(NW), T.anti(V.filter(VPOS), TV)),  # v.e > 0 leaves no NULL v.e
    ("drop_distinct_over_key", U.project("u.c, u.d").distinct(""), U.project("u.c, u.d")),
    # t's key stays a key through a join that meets one u row per t row (on u's key)
    ("drop_distinct_over_key", T.join(U, UT).project("t.id, u.d").distinct(""), T.join(U, UT).project("t.id, u.d")),
    ("drop_distinct_over_key", V.group("v.e", "").project("v.e, COUNT(*)").distinct(""),
     V.group("v.e", "").project("v.e, COUNT(*)")),  # one row per group
    ("drop_order_in_view", Rel.view(U.project("u.c").sort("u.c"), "s", "(SELECT u.c FROM u ORDER BY u.c) AS s"),
     Rel.view(U.project("u.c"), "s", "(SELECT u.c FROM u ORDER BY u.c) AS s")),
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
    # a filter on an aggregate's value cannot move below the GROUP BY (no pushed form is stated for it)
    ("filter_into_view", G.filter(GN), Rel.view(shelled(U.filter(GN), G_SHELL), "g", GROUPED)),
    # v is not unique on v.e: a t row may meet several v rows, and a join would repeat it
    ("semi_join_to_join_on_key", T.semi(V, TV), T.join(V, TV)),
    # u is unique on u.c, but the other side of u.c = u.b + t.a reads u itself: several u rows may match a t row
    ("semi_join_to_join_on_key", T.semi(U, USELF), T.join(U, USELF)),
    # v.e may be NULL: NOT IN would then keep no row, NOT EXISTS every row without a match
    ("not_in_to_anti_join", T.filter(NV), T.anti(V, TV)),
    # t.a is declared NOT NULL, but on the nullable side of a LEFT JOIN it is NULL where t found no match
    ("not_in_to_anti_join", U.left(T, UT).filter(NU), U.left(T, UT).anti(U, UT)),
    # the select list does not show u's key (u.d repeats), v.e is no key, t.b is unique but may be NULL twice
    ("drop_distinct_over_key", U.project("u.d").distinct(""), U.project("u.d")),
    ("drop_distinct_over_key", V.project("v.e").distinct(""), V.project("v.e")),
    ("drop_distinct_over_key", T.project("t.b").distinct(""), T.project("t.b")),
    # a join that may meet several v rows per t row repeats t's key
    ("drop_distinct_over_key", T.join(V, TV).project("t.id, v.e").distinct(""), T.join(V, TV).project("t.id, v.e")),
    # u.c is a key, but the set-returning function repeats each row
    ("drop_distinct_over_key", U.project(SRF).distinct(""), U.project(SRF)),
    # the query around the view reads its order (no ``unordered`` fact)
    ("drop_order_in_view", Rel.view(U.project("u.c").sort("u.c"), "s", "(SELECT u.c FROM u ORDER BY u.c) AS o"),
     Rel.view(U.project("u.c"), "s", "(SELECT u.c FROM u ORDER BY u.c) AS o")),
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
