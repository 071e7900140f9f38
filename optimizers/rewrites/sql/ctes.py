"""Common table expressions inlined as derived tables, where PostgreSQL itself would inline them (12 and later:
a non-recursive CTE of a query, referenced once, not declared MATERIALIZED; one read nowhere is dropped): the
statement then has views instead (``optimizers.rewrites.sql.derived``) and is searched whole, the CTE's query together
with the query around it. A CTE referenced twice or more, or MATERIALIZED, or a recursive WITH, is left as written
(``optimizers.rewrites.sql.blocks`` may still search one of its queries on its own).

>>> import sqlglot
>>> tree = sqlglot.parse_one("WITH big AS (SELECT a FROM t WHERE a > 1) SELECT b.a FROM big AS b", read="postgres")
>>> out, names = inline(tree, "postgres")
>>> out.sql(), names
('SELECT b.a FROM (SELECT a FROM t WHERE a > 1) AS b', ('big',))
>>> inline(sqlglot.parse_one("WITH x AS (SELECT 1 AS a) SELECT * FROM x, x AS y", read="postgres"), "postgres")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
optimizers.rewrites.sql.parsing.Unsupported: WITH: the CTE x is read 2 times (PostgreSQL computes it once; ...
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.sql.scopes import folded


def inline(tree: exp.Expression, dialect: str) -> tuple[exp.Expression, tuple[str, ...]]:
    """``tree`` (a query with a WITH) with each CTE put in place of its one reference, and their names;
    ``Unsupported`` (why) when a CTE cannot be inlined without changing what PostgreSQL does."""
    with_ = tree.args.get("with_")
    if with_.args.get("recursive"):
        raise Unsupported("WITH RECURSIVE is not in the rewriter's subset")
    out = tree.copy()
    out.set("with_", None)
    ctes = [c.copy() for c in with_.expressions]
    for i, cte in enumerate(ctes):
        name = cte.alias
        if cte.args.get("materialized"):
            raise Unsupported(f"WITH: the CTE {name} is MATERIALIZED (computed once by request: left as written)")
        if not isinstance(cte.this, (exp.Select, exp.SetOperation)):
            raise Unsupported(f"WITH: the CTE {name} is not a query")
        readers = [out, *(later.this for later in ctes[i + 1:])]
        refs = [t for r in readers for t in r.find_all(exp.Table) if _same(t.this, cte.args["alias"].this, dialect)
                and not t.args.get("db")]
        if not refs:
            continue  # a query nothing reads: PostgreSQL does not run it either
        if len(refs) > 1:
            raise Unsupported(f"WITH: the CTE {name} is read {len(refs)} times (PostgreSQL computes it once; "
                              f"inlining it would repeat it)")
        ref = refs[0]
        # the reference's own column list (x AS y(b, a)) names the columns, else the CTE's
        head = ref.args.get("alias")
        columns = [c.copy() for c in (head.columns if head is not None and head.columns
                                      else cte.args["alias"].columns)]
        alias = exp.TableAlias(this=exp.to_identifier(ref.alias_or_name), columns=columns)
        ref.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
    return out, tuple(c.alias for c in ctes)


def _same(a: exp.Identifier, b: exp.Identifier, dialect: str) -> bool:
    """Whether two identifiers name the same thing in ``dialect`` (PostgreSQL: unquoted names fold to lower case;
    ``scopes.folded``)."""
    return folded(a, dialect) == folded(b, dialect)
