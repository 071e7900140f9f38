"""The query rewriter: a statement's SQL lowered into a relational algebra held in an egglog e-graph, rewritten by
named rules under a node budget, and the cheapest form written back as SQL. The optimizers, listed in
``OPTIMIZERS`` (``plugins``, over ``base``: the one optimizer contract), differ only in how they choose the next
rule: capped saturation, greedy, random order, and Aurora's learned policy (``search.aurora``, trained ahead by
``search.pretrain``).

Below the optimizers, four layers, each a sub-package; a layer imports only the layers below it (the
``rewrites-layers`` import-linter contract in pyproject.toml), and no sub-package has an import cycle inside:

- ``search``: the rewrite problem, the term a statement's search starts from, its e-graph, the strategies (Aurora's
  learned one and its training ahead of time among them);
- ``rules``: the rewrite rules (over the algebra's terms, over a lowered statement: the expanding ones, over a
  statement's syntax tree: the statement-level ones) and which hold in a dialect;
- ``sql``: the SQL front end: parsing, lowering a statement into the algebra, emitting a term back as SQL;
- ``algebra``: the algebra itself: its terms and what is known of them.

The SQL dialect is data, never an engine's name: ``RewriteProblem.dialect`` (the target's
``connector.dialect``, a key sqlglot reads, set by ``advisor.tuning.rewrites.pipeline``) is carried by every
lowered statement
(``Lowered.dialect``) and the catalog's facts (``Facts.dialect``), and every parse, qualification, simplification,
emission and extraction reads it there. Each rule module declares the dialects its rules hold in (``DIALECTS``, a
``rules.base.Dialects``: valid ones, or why not in one); the rules a problem's searches use are those of its dialect
(``rules.for_dialect``), and those left out keep their reason (``RewriteProblem.left_out``, reported by the
optimizers as ``rules_left_out``). Every rule holds in ``postgres``."""

from optimizers.rewrites.plugins import AuroraRewriter, Greedy, RandomOrder, Saturate

OPTIMIZERS = (Saturate, Greedy, RandomOrder, AuroraRewriter)
