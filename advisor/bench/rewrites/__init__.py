"""``advisor bench rewrite``: the query rewriter on TPC-H, a suite of rewrite-prone statements and a generated
corpus.

``bench`` runs TPC-H and the suite; ``corpus`` the generated statements (``--generated N``) through the same
per-statement flow; ``report`` the targets, the table and the plot they share."""
