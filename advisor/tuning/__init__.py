"""The pipelines, one sub-package per kind (``knobs/``, ``indexes/``, ``rewrites/``: observe -> propose ->
validate on a shadow -> recommend) over the shared modules: ``observe`` (snapshot and bound statements),
``validation`` and ``evidence`` (interleaved A/B rounds and their statistics), ``recommend`` (the stored
recommendation). The service, the demo and every bench call these same functions."""
