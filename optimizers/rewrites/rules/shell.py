"""Rules over a SELECT's shell operators (``optimizers.rewrites.sql.shell_operators``), guarded by the keys,
nullability and output-column analyses: a DISTINCT whose select list shows a key of the rows below it (a column no two
rows share and none has NULL, or the one column they are grouped by) removes nothing; an ORDER BY inside a view
without LIMIT orders rows the query around it does not keep in order (an IN subquery's, or a derived table's under a
query that reads no order: no LIMIT, window or order-sensitive aggregate there; ``unordered``, stated by the
lowering)."""

from __future__ import annotations

from egglog import Set, String, eq, rule, union, var, vars_

from optimizers.rewrites.algebra.analyses import columns, group_key, nonnull, row_by_row, unique_on, unordered
from optimizers.rewrites.algebra.terms import Rel
from optimizers.rewrites.rules.base import EVERY_DIALECT, Rule

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

a, b, r = vars_("a b r", Rel)
s, t, w, k = vars_("s t w k", String)
S1 = var("S1", Set[String])

SHELL_RULES = (
    Rule.of("drop_distinct_over_key",
            "SELECT DISTINCT ... -> SELECT ... when the select list shows, as it is, a column of the rows below "
            "that no two of them share and none has NULL (a NOT NULL unique key, kept through filters and joins "
            "that meet at most one row), or the one column they are grouped by, and no set-returning function "
            "makes several rows of one: no two output rows are equal",
            rule(eq(r).to(a.project(s).distinct("")), unique_on(a, k), nonnull(a, k), row_by_row(s),
                 eq(S1).to(columns(a.project(s))), S1.contains(k)).then(union(r).with_(a.project(s))),
            rule(eq(r).to(b.group(t, w).project(s).distinct("")), group_key(t, k), row_by_row(s),
                 eq(S1).to(columns(b.group(t, w).project(s))), S1.contains(k)).then(
                union(r).with_(b.group(t, w).project(s)))),
    Rule.of("drop_order_in_view",
            "(SELECT ... ORDER BY k) AS v -> (SELECT ...) AS v when the view has no LIMIT or OFFSET and the query "
            "around it keeps no order of its rows (an IN subquery; a derived table under a query without LIMIT, "
            "window or order-sensitive aggregate): the sort changes nothing the statement returns",
            rule(eq(r).to(Rel.view(a.sort(s), t, w)), unordered(w)).then(union(r).with_(Rel.view(a, t, w)))),
)
