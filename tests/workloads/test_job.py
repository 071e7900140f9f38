"""The synthetic IMDB and its 33 JOB-style templates: the schema with its foreign keys, skewed references, and
every template parses and runs at a tiny scale."""

import psycopg

from connectors import factory
from workloads.datasets import job


def test_job_schema_data_and_every_template_runs(db):
    rows = job.load(factory.connector(db), scale=0.002, seed=1)
    with psycopg.connect(db, autocommit=True) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"title", "name", "cast_info", "movie_info", "movie_companies", "company_name", "keyword",
                "movie_keyword", "info_type", "kind_type", "role_type"} <= tables
        fks = conn.execute("SELECT count(*) FROM pg_constraint WHERE contype = 'f'").fetchone()[0]
        assert fks >= 20
        # no index but the primary keys
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' "
                            "AND indexname NOT LIKE '%pkey'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM cast_info").fetchone()[0] == rows["cast_info"]
        # skew: the most referenced tenth of the movies holds far more than a tenth of the cast
        top = conn.execute(f"SELECT count(*) FROM cast_info WHERE movie_id <= {rows['title'] // 10}").fetchone()[0]
        assert top > 0.2 * rows["cast_info"]
        for t in job.TEMPLATES:
            conn.execute(t.sql).fetchall()
    assert job.drive(factory.connector(db), rounds=1) == 33


def test_job_templates_are_fixed_and_join_4_to_12_tables():
    assert [t.sql for t in job.TEMPLATES] == [job._template(i, s).sql for i, s in enumerate(job.SHAPES)]
    assert len({t.sql for t in job.TEMPLATES}) == 33
    assert min(t.tables for t in job.TEMPLATES) == 4 and max(t.tables for t in job.TEMPLATES) == 12
