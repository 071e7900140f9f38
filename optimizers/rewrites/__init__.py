"""The query rewriter (issue 15, in progress): SQL lowered into a relational algebra held in an egglog e-graph
(``algebra``, ``lower``, ``term``), rewrite rules (``rules``), the moves a search strategy makes (``search``), and
the extracted core written back as SQL (``emit``). The optimizers, listed in ``OPTIMIZERS``, differ only in how
they choose the next rule: capped saturation, greedy, random order, and Aurora's learned policy. The pipeline
(equivalence by execution on the shadow, timing), the CLI, run kind and bench come next."""

from optimizers.rewrites.plugins import AuroraRewriter, Greedy, RandomOrder, Saturate

OPTIMIZERS = (Saturate, Greedy, RandomOrder, AuroraRewriter)
