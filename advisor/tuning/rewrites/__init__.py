"""The rewrite kind: ``pipeline`` (statements -> an optimizer's rewrites -> ``equivalence`` proven by execution
-> ``timing`` on a shadow -> recommend, never applied) and ``stats`` (row estimates that steer extraction)."""
