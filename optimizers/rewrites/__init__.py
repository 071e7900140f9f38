"""The query rewriter (issue 15, in progress): SQL lowered into a relational algebra held in an egglog e-graph
(``algebra``, ``lower``, ``term``), rewrite rules (``rules``), the moves a search strategy makes (``search``), and
the extracted core written back as SQL (``emit``). Not yet an optimizer of the contract: the pipeline, the
strategies (capped saturation, random, greedy, the RL agent), equivalence by execution on the shadow and the
bench come next."""
