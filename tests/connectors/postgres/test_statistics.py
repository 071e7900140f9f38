"""A full-copy shadow plans with the target's statistics, not a sample of its own."""

from connectors import factory
from tests.conftest import run

STATS = """SELECT attname, null_frac, n_distinct, most_common_vals::text, most_common_freqs, histogram_bounds::text,
                  correlation FROM pg_stats WHERE tablename = 'sales' AND attname <> 'tags' ORDER BY attname"""
PREDICATES = ("region = 'north'", "qty < 7", "day BETWEEN '2024-01-01' AND '2024-01-20'", "id > 4990",
              "price > 50", "note IS NULL")


def test_a_cloned_shadow_takes_the_targets_column_statistics(db):
    run(db, "CREATE TABLE sales (id int PRIMARY KEY, region text, qty int, day date, price numeric(8, 2), "
            "note varchar(20), tags int[])",
        "INSERT INTO sales SELECT g, (ARRAY['north', 'south', 'east', 'west'])[1 + (g * g) % 4], g % 13, "
        "'2024-01-01'::date + g % 200, (g % 1000) / 10.0, CASE WHEN g % 5 = 0 THEN NULL ELSE 'n' || g % 50 END, "
        "ARRAY[g % 3, g % 7] FROM generate_series(1, 5000) g")
    with factory.connector(db).connect() as conn:  # a coarse sample the shadow's own ANALYZE would not draw
        conn.execute("SET default_statistics_target = 3")
        conn.execute("ANALYZE sales")
        target_stats = conn.execute(STATS).fetchall()
        target_rows = [conn.execute(f"EXPLAIN SELECT * FROM sales WHERE {p}").fetchone()[0] for p in PREDICATES]
    said: list[str] = []
    with factory.clone(factory.connector(db), say=said.append) as shadow:
        with shadow.connector.connect() as conn:
            assert conn.execute(STATS).fetchall() == target_stats
            assert [conn.execute(f"EXPLAIN SELECT * FROM sales WHERE {p}").fetchone()[0]
                    for p in PREDICATES] == target_rows  # the same estimates, the same plans
            tags = conn.execute("SELECT most_common_elems IS NOT NULL FROM pg_stats WHERE attname = 'tags'").fetchone()
            assert tags == (True,)  # an array column keeps the shadow's own element statistics
    assert any("copied the target's statistics of 6 column(s)" in m and "1 kept" in m for m in said), said
