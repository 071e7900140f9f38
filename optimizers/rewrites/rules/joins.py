"""Join rules: an outer join whose nullable side a later filter rejects NULLs of is an inner join; inner joins
commute and associate (the order the extraction's cost then picks, under the e-graph's size bound)."""

from __future__ import annotations

from egglog import Set, String, eq, ne, rewrite, rule, union, vars_

from optimizers.rewrites.algebra.analyses import aliases, refs, rejects
from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.rules.base import EVERY_DIALECT, Rule

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

a, b, c, r = vars_("a b c r", Rel)
p, q = vars_("p q", Pred)
S1, S2, S3 = vars_("S1 S2 S3", Set[String])
NONE = Set[String].empty()

JOIN_RULES = (
    Rule.of("left_join_to_inner",
            "filter(a LEFT JOIN b, q) -> filter(a JOIN b, q) when q rejects NULLs of an alias of b: the "
            "NULL-extended rows it would keep are the ones q drops",
            rule(eq(r).to(a.left(b, p).filter(q)), eq(S1).to(rejects(q)), eq(S2).to(aliases(b)),
                 ne(S1 & S2).to(NONE)).then(union(r).with_(a.join(b, p).filter(q)))),
    Rule.of("join_commute", "a JOIN b ON p -> b JOIN a ON p",
            rewrite(a.join(b, p)).to(b.join(a, p))),
    Rule.of("join_associate",
            "(a JOIN b ON p) JOIN c ON q -> a JOIN (b JOIN c ON q) ON p when q reads only b and c",
            rule(eq(r).to(a.join(b, p).join(c, q)), eq(S1).to(refs(q)), eq(S2).to(aliases(b)),
                 eq(S3).to(aliases(c)), eq(S1 - (S2 | S3)).to(NONE)).then(union(r).with_(a.join(b.join(c, q), p)))),
    Rule.of("filter_into_join",
            "filter(a JOIN b ON p, q) -> a JOIN b ON (p AND q) when q reads both sides: a join condition the "
            "planner can hash or merge on",
            rule(eq(r).to(a.join(b, p).filter(q)), eq(S1).to(refs(q)), eq(S2).to(aliases(a)), eq(S3).to(aliases(b)),
                 ne(S1 & S2).to(NONE), ne(S1 & S3).to(NONE), eq(S1 - (S2 | S3)).to(NONE)).then(
                union(r).with_(a.join(b, Pred.both(p, q))))),
)
