"""Rules over views (derived tables and grouped IN subqueries, ``optimizers.rewrites.sql.derived``) and keys: a filter
above a view moves into it where its shape allows (the translation into the view's own columns is made when the
statement is lowered, kept as the ``pushed`` fact), then down through the view's shell operators (select list,
grouping, DISTINCT, ORDER BY: never a LIMIT) to its core, where the pushdown rules take it on; a semi-join whose
condition equates a key of its right side with values of the left side is a join (each left row meets at most one
right row), which the join rules can then reorder."""

from __future__ import annotations

from egglog import Set, String, eq, rule, union, vars_

from optimizers.rewrites.algebra.analyses import aliases, equal_to, pushed, sinks, unique_on
from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.rules.base import Dialects, Rule

# the dialects these rules keep a statement's meaning in (``rules.base.Dialects``). In MySQL a GROUP BY or DISTINCT
# puts strings equal under the collation (by default without case or trailing spaces: 'Bob', 'bob', 'bob ') in one
# group and shows any one row's spelling, so a filter that reads the spelling (BINARY, LENGTH, a _bin collation)
# keeps other groups below the grouping than above it; and a string key compared with a number compares as numbers
# ('1' and '01' both equal 1), so a key unique as text may meet one row twice when a semi-join becomes a join.
WHY = ("GROUP BY and DISTINCT compare strings under the collation (by default without case or trailing spaces) "
       "and show any one spelling of a group, so a filter moved into a view may keep other groups; a key compared "
       "with a number compares as a number, so a key unique as text may match a row twice as a join")
DIALECTS = Dialects(refused=(("mariadb", WHY), ("mysql", WHY)))  # keyed by the connectors' dialect keys

a, b, i, r = vars_("a b i r", Rel)
p, q = vars_("p q", Pred)
s, t, w, k = vars_("s t w k", String)
S1, S2 = vars_("S1 S2", Set[String])
NONE = Set[String].empty()

VIEW_RULES = (
    Rule.of("filter_into_view",
            "filter(view(i), p) -> view(filter(i, p')) where p reads only columns the view computes row by row "
            "(its grouping expressions under GROUP BY; never past a LIMIT, window or one-row aggregate), p' being "
            "p over the view's inner expressions: whole groups are kept or dropped either way; p' then passes the "
            "view's select list, grouping, DISTINCT and ORDER BY down to its core (one operator per run)",
            rule(eq(r).to(Rel.view(i, t, w).filter(p)), eq(q).to(pushed(p))).then(
                union(r).with_(Rel.view(i.filter(q), t, w)), sinks(q)),
            rule(eq(r).to(a.project(s).filter(q)), sinks(q)).then(union(r).with_(a.filter(q).project(s))),
            rule(eq(r).to(a.group(s, t).filter(q)), sinks(q)).then(union(r).with_(a.filter(q).group(s, t))),
            rule(eq(r).to(a.distinct(s).filter(q)), sinks(q)).then(union(r).with_(a.filter(q).distinct(s))),
            rule(eq(r).to(a.sort(s).filter(q)), sinks(q)).then(union(r).with_(a.filter(q).sort(s))),
            repeat=5),
    Rule.of("semi_join_to_join_on_key",
            "a SEMI JOIN b ON p -> a JOIN b ON p when p equates a column k of b, unique in b, with values that read "
            "nothing of b: each row of a meets at most one row of b, so the join neither drops nor repeats rows "
            "(IN over a grouped subquery becomes a join with it)",
            rule(eq(r).to(a.semi(b, p)), eq(S1).to(equal_to(p, k)), unique_on(b, k), eq(S2).to(aliases(b)),
                 eq(S1 & S2).to(NONE)).then(union(r).with_(a.join(b, p)))),
)
