"""The SQL front end: a statement's text read in its dialect (``parsing``) and taken apart into a lowered statement
(``lowered``: its tables, joins, conditions, views, shell and its shell's subqueries), by ``lower`` (one SELECT),
``setops`` (a set operation's branches), ``ctes`` (CTEs PostgreSQL would inline), ``blocks`` (a SELECT inside a
statement outside the subset), with what it reads off the syntax tree: predicates (``predicates``), derived tables
(``derived``), the shell's subqueries (``subqueries``), expressions (``expressions``) and aliases in nested scopes
(``scopes``); the shell as operators of the algebra (``shell_operators``); and an extracted term written back as
SQL (``emit``). It imports the algebra (``optimizers.rewrites.algebra``) and nothing else of the rewriter.
"""
