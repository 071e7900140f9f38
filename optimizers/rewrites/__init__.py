"""The query rewriter (issue 15, in progress): SQL lowered into a relational algebra held in an egglog e-graph
(``algebra``, ``lower``, ``term``), rewrite rules (``rules``), the moves a search strategy makes (``search``), and
the extracted core written back as SQL (``emit``). The optimizers, listed in ``OPTIMIZERS``, differ only in how
they choose the next rule: capped saturation, greedy, random order, and Aurora's learned policy. The pipeline
(equivalence by execution on the shadow, timing), the CLI, run kind and bench come next.

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
