"""Sizes that are true, on a real server: HypoPG over-estimates a B-tree on a column with few distinct values
(PostgreSQL 13+ deduplicates equal keys, HypoPG does not); a B-tree laid out from a sample of its table comes
within a few percent of the size the server builds, before anything is built; without a sample, the size model
learnt from built indexes (one the shadow built, or an existing one) brings the estimate of another index on a
column of the same type close to its built size; the observations are stored for the next run."""

from advisor.core.domain import IndexChange
from advisor.tuning.indexes import sizing as index_sizing
from advisor.tuning.indexes.problem import build_problem
from connectors.postgres import PostgresConnector
from optimizers.indexes.sizing import SizeModel
from tests.conftest import run

# the shapes the index bench builds on TPC-H, over one generated table: single and composite keys, integer, text,
# date and numeric columns, few and many distinct values, correlated columns, INCLUDE, a partial index
SHAPES = [IndexChange("public", "t", cols, include=inc, where=where) for cols, inc, where in [
    (("id",), (), None), (("a",), (), None), (("b",), (), None), (("s",), (), None), (("h",), (), None),
    (("d",), (), None), (("n",), (), None), (("a", "b"), (), None), (("d", "a"), (), None), (("s", "id"), (), None),
    (("d",), ("id", "n"), None), (("a",), ("price",), None), (("id",), (), "s = 'status-1'")]]

A = IndexChange("public", "t", ("a",))  # 40 distinct integers
B = IndexChange("public", "t", ("b",))  # 3000 distinct integers


def make_table(db):
    run(db, "CREATE TABLE t (id int, a int, b int, pad text)",
        "INSERT INTO t SELECT x, x % 40, (x * 7) % 3000, 'p' FROM generate_series(1, 300000) x", "ANALYZE t")


def built_sizes(db, connector, *indexes):
    run(db, *(f"CREATE INDEX {connector.index_name(ix)} ON t ({ix.columns[0]})" for ix in indexes))
    return connector.index_sizes(list(indexes))


def test_hypopg_overestimates_a_deduplicated_btree_and_one_built_index_calibrates_another(db):
    make_table(db)
    connector = PostgresConnector(db)
    with connector.whatif() as whatif:
        est_a, est_b = whatif.index_size(A), whatif.index_size(B)
    built = built_sizes(db, connector, A, B)
    print(f"a: HypoPG {est_a} built {built[A]}; b: HypoPG {est_b} built {built[B]}")
    assert est_a > 2.5 * built[A] and est_b > 2.5 * built[B]  # no deduplication in HypoPG's estimate
    model = SizeModel(connector.column_data_types(), facts=connector.index_facts())
    model.learn(A, est_a, built[A])
    calibrated = model.calibrate(B, est_b)
    print(f"b calibrated from a: {calibrated}")
    assert abs(calibrated - built[B]) / built[B] < 0.35
    assert model.calibrate(IndexChange("public", "t", ("pad",)), 12345) == 12345  # text: nothing learnt yet


def test_existing_indexes_calibrate_the_problem_and_built_sizes_are_kept_for_the_next_run(db, tmp_path):
    make_table(db)
    connector = PostgresConnector(db)
    run(db, "CREATE INDEX t_a_existing ON t (a)")
    sizes = index_sizing.prepare(connector, connector.observe(), tmp_path)
    problem, session = build_problem(connector, connector.observe(), [], 1 << 30, sizes=sizes)
    with session:
        calibrated = problem.whatif.size(B)
        raw = index_sizing.raw_estimates(problem.whatif, [B])
    built = built_sizes(db, connector, B)
    print(f"b: HypoPG {raw[B]} calibrated from t_a_existing {calibrated} built {built[B]}")
    assert raw[B] > 2.5 * built[B] and abs(calibrated - built[B]) / built[B] < 0.35
    index_sizing.learn_built(sizes, raw, built, tmp_path)
    later = index_sizing.prepare(connector, connector.observe(), tmp_path)  # the next run reads what was built
    assert later.calibrate(B, raw[B]) == built[B]


def _generated(db):
    run(db, "CREATE TABLE t (id int, a int, b int, c int, n numeric, s text, h text, d date, price numeric, pad text)",
        "INSERT INTO t SELECT x, x % 40, (x * 7) % 3000, (x / 5) % 13, (x % 40)::numeric, 'status-' || (x % 5), "
        "md5(x::text), date '2020-01-01' + (x % 700), round((x % 100000) * 1.37, 2), 'p' "
        "FROM generate_series(1, 200000) x", "ANALYZE t")


def _built(db, connector, indexes):
    for k, ix in enumerate(indexes):
        include = f" INCLUDE ({', '.join(ix.include)})" if ix.include else ""
        where = f" WHERE {ix.where}" if ix.where else ""
        run(db, f"CREATE INDEX probe_{k} ON t ({', '.join(ix.columns)}){include}{where}")
    with connector.connect() as conn:
        return {ix: conn.execute(f"SELECT pg_relation_size('probe_{k}')").fetchone()[0]
                for k, ix in enumerate(indexes)}


def test_sizes_laid_out_from_a_sample_are_within_5_percent_of_the_built_sizes(db, tmp_path):
    """Nothing built before: each estimate is the B-tree laid out from 30,000 sampled rows of its table (tuples
    aligned per column, the key's repeats from the sample, the rows a partial index keeps). Measured here (200,000
    rows, 15% sampled): at most 2.4% off, median 0.2% (HypoPG: up to 6.1x over); asserted within 5%."""
    _generated(db)
    connector = PostgresConnector(db)
    sizes = index_sizing.prepare(connector, connector.observe(), tmp_path)
    problem, session = build_problem(connector, connector.observe(), [], 1 << 30, sizes=sizes)
    with session:
        estimated = {ix: problem.whatif.size(ix) for ix in SHAPES}
        raw = index_sizing.raw_estimates(problem.whatif, SHAPES)
    built = _built(db, connector, SHAPES)
    report = index_sizing.size_errors(estimated, built)
    for ix, row in zip(SHAPES, report["indexes"]):
        print(f"{row['index']:40} HypoPG {raw[ix]:>9} estimated {row['estimated_bytes']:>9} "
              f"built {row['built_bytes']:>9} error {row['error']:+.3f}")
    print("max", report["max"], "median", report["median"])
    assert len(report["indexes"]) == len(SHAPES)
    assert report["max"] < 0.05
    assert max(raw[ix] / built[ix] for ix in SHAPES) > 2.5  # HypoPG alone is far off on the repeating keys


def test_without_a_sample_a_first_run_calibrates_from_the_statistics(db, tmp_path):
    """No sample and no index to learn from: a B-tree's size is estimated from each key's average width and how
    often it repeats, so the calibrated estimates of low- and high-cardinality keys, a two-column key of
    independent columns, a numeric key and an INCLUDE index (neither deduplicated) land near what the server
    builds. Correlated columns repeat more than independence says: that estimate errs large, never small."""
    run(db, "CREATE TABLE t (id int, a int, b int, c int, n numeric, s text, pad text)",
        "INSERT INTO t SELECT x, x % 40, (x * 7) % 3000, (x / 5) % 13, (x % 40)::numeric, "
        "'status-' || (x % 5), 'p' FROM generate_series(1, 300000) x", "ANALYZE t")
    connector = PostgresConnector(db)
    snapshot = connector.observe()
    prepared = index_sizing.prepare(connector, snapshot, tmp_path)
    sizes = SizeModel.from_json(None, prepared.types, prepared.repeats, prepared.widths, prepared.rows,
                                facts=prepared.facts)  # no sample
    cases = [IndexChange("public", "t", cols, include=inc) for cols, inc in
             [(("a",), ()), (("b",), ()), (("id",), ()), (("s", "c"), ()), (("n",), ()), (("s",), ()),
              (("a",), ("id",)), (("a", "b"), ())]]
    problem, session = build_problem(connector, snapshot, [], 1 << 30, sizes=sizes)
    with session:
        calibrated = {ix: problem.whatif.size(ix) for ix in cases}
        raw = index_sizing.raw_estimates(problem.whatif, cases)
    for k, ix in enumerate(cases):
        include = f" INCLUDE ({', '.join(ix.include)})" if ix.include else ""
        run(db, f"CREATE INDEX probe_{k} ON t ({', '.join(ix.columns)}){include}")
    with connector.connect() as conn:
        built = {ix: conn.execute(f"SELECT pg_relation_size('probe_{k}')").fetchone()[0]
                 for k, ix in enumerate(cases)}
    for ix in cases:
        print(f"{ix.columns} {ix.include}: HypoPG {raw[ix]} calibrated {calibrated[ix]} built {built[ix]}")
    assert raw[cases[0]] > 2.5 * built[cases[0]]  # HypoPG alone is far off on the repeating key
    assert all(abs(calibrated[ix] - built[ix]) / built[ix] < 0.2 for ix in cases[:-1])
    assert calibrated[cases[-1]] > built[cases[-1]]  # a and b are correlated (3,000 pairs, not 120,000)
