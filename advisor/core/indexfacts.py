"""What an engine's indexes are like, as data (``IndexFacts``): the connector supplies it
(``Connector.index_facts``) and the index problem, its candidates and the size model read it, so that nothing above
``connectors`` assumes one engine's page size, deduplication or DDL features.

>>> f = IndexFacts(page_bytes=16384, deduplication=False, include=False, partial=False, max_key_columns=32,
...                name_limit=64, cost_unit="cost units", entry_cost=1.0, no_dedup_types=())
>>> f.allows(include=("b",)), f.allows(where="a > 0"), f.allows()
(False, False, True)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IndexFacts:
    """One engine's index facts. ``page_bytes``: the size of a B-tree page (bytes); ``deduplication``: whether
    equal B-tree keys are stored once with a list of row ids; ``include``: whether an index can carry non-key
    (INCLUDE) columns; ``partial``: whether an index can cover only the rows a predicate keeps; ``max_key_columns``:
    the most key columns one index may have; ``name_limit``: the longest identifier (bytes); ``cost_unit``: what
    the planner's costs count, for people (they are compared only with costs of the same engine); ``entry_cost``:
    the planner cost units one index entry written adds (a descent over mostly cached pages, a dirtied leaf
    written later): the upkeep of an index on a written table, which the planner leaves out of a write's cost;
    ``no_dedup_types``: the key types (standard type names, ``Connector.column_data_types``) whose B-trees the
    engine never deduplicates even where it deduplicates others. ``whatif_builds``: the engine's what-if indexes are
    built for real (MariaDB's IGNORED indexes, not HypoPG's hypothetical ones), so a search on a large database may
    run on a sampled shadow (``advisor.tuning.indexes.sampled``)."""

    page_bytes: int
    deduplication: bool
    include: bool
    partial: bool
    max_key_columns: int
    name_limit: int
    cost_unit: str
    entry_cost: float
    no_dedup_types: tuple[str, ...]
    whatif_builds: bool = False

    def allows(self, include: tuple[str, ...] = (), where: str | None = None) -> bool:
        """Whether an index with these INCLUDE columns and partial predicate can be built on the engine."""
        return (self.include or not include) and (self.partial or not where)
