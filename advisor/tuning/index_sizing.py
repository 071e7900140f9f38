"""Calibrating what-if index sizes on a shadow (see ``optimizers.indexes.sizing``): the column types, the
observations stored for the target by earlier runs, a hypothetical twin of each plain existing index against its
real size on the shadow, and after validation the indexes the shadow really built. The observations are kept in
``<model dir>/index_sizes.json``, next to the target's trained models."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from advisor.core.domain import IndexChange, Snapshot
from advisor.core.progress import Say, silent
from connectors.base import Connector
from optimizers.indexes.sizing import CalibratedSizes, SizeModel

FILE = "index_sizes.json"
COLUMN_TYPES_SQL = """/* db-advisor */ SELECT table_schema, table_name, column_name, data_type
FROM information_schema.columns WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"""


def column_types(connector: Connector) -> dict[tuple[str, str, str], str]:
    """(schema, table, column) -> SQL type name, from the standard information_schema."""
    with connector.connect() as conn:
        cur = conn.cursor()
        cur.execute(COLUMN_TYPES_SQL)
        return {(s, t, c): kind for s, t, c, kind in cur.fetchall()}


def repeats(snapshot: Snapshot) -> dict[tuple[str, str, str], float]:
    """(schema, table, column) -> rows per distinct value, from the planner's statistics (``n_distinct`` < 0 is
    minus the fraction of rows that are distinct)."""
    rows = {(t.schema, t.name): t.rows for t in snapshot.tables}
    out = {}
    for c in snapshot.columns:
        n = rows.get((c.schema, c.table), 0.0)
        distinct = c.n_distinct if c.n_distinct > 0 else -c.n_distinct * n
        if n > 0 and distinct > 0:
            out[(c.schema, c.table, c.column)] = n / distinct
    return out


def prepare(shadow: Connector, snapshot: Snapshot, model_dir: Path | None, say: Say = silent) -> SizeModel:
    """The size model for a run on ``shadow``: stored observations, then the shadow's existing plain indexes."""
    from advisor.tuning.indexing import index_columns  # indexing wraps its planner with the model this returns

    stored = None
    if model_dir is not None and (model_dir / FILE).is_file():
        try:
            stored = json.loads((model_dir / FILE).read_text())
        except (OSError, ValueError):
            stored = None
    model = SizeModel.from_json(stored, column_types(shadow), repeats(snapshot),
                                {(c.schema, c.table, c.column): float(c.avg_width) for c in snapshot.columns},
                                {(t.schema, t.name): t.rows for t in snapshot.tables})
    twins = {}
    for info in snapshot.indexes:
        ix = index_columns(info)
        if ix is not None and not info.is_primary and not info.is_unique and ix.method == "btree":
            twins[IndexChange(ix.schema, ix.table, ix.columns, ix.method)] = ix  # unnamed twin -> the real index
    if twins:
        built = shadow.index_sizes(list(twins.values()))
        with shadow.whatif() as whatif:
            for twin, real in twins.items():
                model.learn(twin, whatif.index_size(twin), built.get(real))
        say(f"index sizes calibrated from {sum(1 for r in twins.values() if built.get(r))} existing index(es)")
    return model


def raw_estimates(whatif, indexes: Iterable[IndexChange]) -> dict[IndexChange, int]:
    """The uncorrected what-if estimates of ``indexes`` (when the coster's planner was calibrated)."""
    planner = getattr(whatif, "planner", None)
    return {ix: planner.raw[ix] for ix in indexes if ix in planner.raw} if isinstance(planner, CalibratedSizes) else {}


def learn_built(model: SizeModel, raw: dict[IndexChange, int], built: dict[IndexChange, int | None],
                model_dir: Path | None) -> None:
    """Record the sizes the shadow really built against their raw estimates, and store the model."""
    for ix, size in built.items():
        if ix in raw:
            model.learn(ix, raw[ix], size)
    if model_dir is not None:
        model_dir.mkdir(parents=True, exist_ok=True)
        tmp = model_dir / (FILE + ".tmp")
        tmp.write_text(json.dumps(model.to_json(), indent=1, sort_keys=True))
        tmp.replace(model_dir / FILE)
