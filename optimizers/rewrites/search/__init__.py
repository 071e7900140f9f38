"""The search: a rewrite problem (``problem``: a workload's statements, lowered once, with the target's statistics
and the catalog's keys), the term a statement's search starts from with the expanding rules' forms (``term``), one
statement's e-graph and the moves a strategy makes on it (``egraph``), the strategies that choose the next rule
(``strategies``: the baselines; ``aurora``: Aurora's learned policy, on the shared RL core ``optimizers.rl``), the
statements generated from a schema to train a learned strategy on (``corpus``), and Aurora's policy trained ahead of
time on generated schemas and shipped (``pretrain``). It imports the rules, the SQL front end and the algebra.

Nothing here is imported when the optimizers are listed (every CLI call does): the e-graph's modules (egglog) load
when a search first runs, PyTorch when Aurora first works.
"""
