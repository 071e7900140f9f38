"""Rules that need the nullability analysis (``nonnull``: no row of a relation has the column NULL, from NOT NULL
columns and the conditions that reject NULLs below): ``x NOT IN (SELECT y FROM b WHERE q)`` is ``NOT EXISTS
(SELECT 1 FROM b WHERE q AND y = x)``, an anti-join, only where neither x nor y can be NULL (a NULL y makes NOT
IN drop every row without a match; a NULL x drops its row unless the subquery is empty). The NOT IN's subquery and
condition are stated when the statement is lowered (``notin_sub``, ``notin_on``, ``notin_keys``)."""

from __future__ import annotations

from egglog import String, eq, rule, union, vars_

from optimizers.rewrites.algebra.analyses import nonnull, notin_keys, notin_on, notin_sub
from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.rules.base import EVERY_DIALECT, Rule

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

a, b, r = vars_("a b r", Rel)
p, q = vars_("p q", Pred)
x, y = vars_("x y", String)

NULL_RULES = (
    Rule.of("not_in_to_anti_join",
            "filter(a, x NOT IN (SELECT y FROM b WHERE ...)) -> a ANTI JOIN b ON y = x AND ... when x is never NULL "
            "in a and y never NULL in b (declared NOT NULL, or rejected by a condition below): NOT IN's "
            "three-valued logic is then two-valued, and the planner may hash or merge the anti-join",
            rule(eq(r).to(a.filter(p)), eq(b).to(notin_sub(p)), eq(q).to(notin_on(p)), notin_keys(p, x, y),
                 nonnull(a, x), nonnull(b, y)).then(union(r).with_(a.anti(b, q)))),
)
