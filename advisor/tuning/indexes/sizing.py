"""Calibrating what-if index sizes on a shadow (see ``optimizers.indexes.sizing``): the column types, a random
sample of each table a candidate is on (``TableSamples``, through the connector), the observations stored for the target by
earlier runs, a hypothetical twin of each plain existing index against its real size on the shadow, and after
validation the indexes the shadow really built. The observations are kept in ``<model dir>/index_sizes.json``,
next to the target's trained models. ``size_errors`` reports estimated against built sizes (the bench's check of
the model)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from advisor.core.domain import IndexChange, Snapshot
from advisor.core.progress import Say, silent
from connectors.base import Connector
from optimizers.indexes.btree import ColumnSample, TableSample
from optimizers.indexes.sizing import CalibratedSizes, SizeModel

FILE = "index_sizes.json"
SAMPLE_ROWS = 30_000  # rows sampled per table, as many as ANALYZE reads at the default statistics target
SAMPLE_SEED = 7  # REPEATABLE: a predicate's query samples the same rows


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
    from advisor.tuning.indexes.problem import index_columns  # indexing wraps its planner with the model this returns

    stored = None
    if model_dir is not None and (model_dir / FILE).is_file():
        try:
            stored = json.loads((model_dir / FILE).read_text())
        except (OSError, ValueError):
            stored = None
    model = SizeModel.from_json(stored, shadow.column_data_types(), repeats(snapshot),
                                {(c.schema, c.table, c.column): float(c.avg_width) for c in snapshot.columns},
                                {(t.schema, t.name): t.rows for t in snapshot.tables},
                                TableSamples(shadow), shadow.index_facts())
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


class TableSamples:
    """Random samples of the tables behind a connector, read when first asked and kept: per column each sampled
    value's stored size and a 64-bit hash of its text, the type's length and alignment (``optimizers.indexes.btree``),
    through the connector's ``table_sample`` / ``sample_matching`` (``SAMPLE_ROWS`` rows, a fixed seed). A table
    that cannot be sampled (no permission, a dropped table) has no sample: its sizes
    fall back to the statistics."""

    def __init__(self, connector: Connector):
        self.connector = connector
        self._tables: dict[tuple[str, str], TableSample | None] = {}
        self._raw: dict[tuple[str, str], dict] = {}
        self._masks: dict[tuple[str, str, str], np.ndarray | None] = {}

    def table(self, schema: str, table: str) -> TableSample | None:
        key = (schema, table)
        if key not in self._tables:
            self._tables[key] = None
            try:
                raw = self.connector.table_sample(schema, table, SAMPLE_ROWS, SAMPLE_SEED)
            except Exception:  # noqa: BLE001 - the driver's errors are not ours to name; the statistics remain
                raw = None
            if raw:
                self._raw[key] = raw
                self._tables[key] = _sample(raw)
        return self._tables[key]

    def matching(self, schema: str, table: str, where: str) -> np.ndarray | None:
        key = (schema, table, where)
        if key not in self._masks:
            self._masks[key] = None
            if self.table(schema, table) is not None:
                raw = self._raw[(schema, table)]
                try:
                    hits = self.connector.sample_matching(schema, table, raw["percent"], SAMPLE_SEED, where)
                except Exception:  # noqa: BLE001 - a predicate the sample cannot evaluate: no mask
                    return None
                self._masks[key] = np.array([c in hits for c in raw["ctids"]], dtype=bool)
        return self._masks[key]


def _sample(raw: dict) -> TableSample:
    """A connector's sample (``table_sample``) as the size model's ``TableSample``."""
    columns = {}
    for k, (name, length, align) in enumerate(raw["columns"]):
        sizes = np.array([np.nan if row[k][0] is None else float(row[k][0]) for row in raw["values"]])
        hashes = np.array([-1 if row[k][1] is None else int(row[k][1]) for row in raw["values"]], dtype=np.int64)
        columns[name] = ColumnSample(sizes, hashes, length, align)
    return TableSample(max(raw["rows"], float(len(raw["values"]))), columns)


def first_run_estimates(connector: Connector, indexes: Iterable[IndexChange]) -> dict[IndexChange, int]:
    """What a first run on the server behind ``connector`` estimates for ``indexes`` (bytes): nothing learnt
    from earlier runs, the size model over a sample of each table (HypoPG's estimate where the model has no
    answer)."""
    model = prepare(connector, connector.observe(), None)
    with connector.whatif() as whatif:
        planner = CalibratedSizes(whatif, model)
        return {ix: planner.index_size(ix) for ix in indexes}


def size_errors(estimated: Mapping[IndexChange, int], built: Mapping[IndexChange, int | None]) -> dict:
    """Estimated against built sizes (bytes) of the indexes both know: per index both and the relative error
    ``estimated / built - 1``, and the largest and median absolute relative error (of all, and of those of
    1 MB or more built, where a page more or less is under 1%).

    >>> a, b = IndexChange("public", "t", ("a",)), IndexChange("public", "t", ("b",))
    >>> r = size_errors({a: 2_060_000, b: 16384}, {a: 2_000_000, b: 8192})
    >>> r["max"], r["median"], r["max_1mb"]
    (1.0, 0.515, 0.03)
    """
    rows = [{"index": ix.label(), "estimated_bytes": int(est), "built_bytes": int(built[ix]),
             "error": round(est / built[ix] - 1, 4)} for ix, est in estimated.items() if built.get(ix)]
    errors = [abs(r["error"]) for r in rows]
    large = [abs(r["error"]) for r in rows if r["built_bytes"] >= 1 << 20]
    return {"indexes": rows, "max": round(max(errors), 4) if errors else None,
            "median": round(statistics.median(errors), 4) if errors else None,
            "max_1mb": round(max(large), 4) if large else None,
            "median_1mb": round(statistics.median(large), 4) if large else None}
