"""The relational algebra itself, as egglog sorts: its terms (``terms``: relations and predicates) and what is known
of them and what they cost (``analyses``). The lowest layer of the rewriter: it imports nothing else of it.
"""
