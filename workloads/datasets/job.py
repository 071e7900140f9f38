"""A JOB-style workload on a synthetic IMDB-like database, for ``advisor bench indexes --workloads job``.

``load`` creates the schema (primary keys and declared foreign keys, no other index) and generates the data on the
server at a scale factor (``SCALE_ROWS`` are the row counts at 1.0): movies, people and companies referenced with a
power-law skew (a few popular movies, keywords and companies carry most rows), production years skewed to recent
ones, categorical values with skewed frequencies. ``TEMPLATES`` are 33 join queries of this project's own, 4 to 12
tables each, with literal constants, built from join blocks around ``title`` (keywords, companies, infos, cast,
links ...), the shape of the Join Order Benchmark's queries but not their text.

>>> len(TEMPLATES), all(4 <= n <= 12 for n in (t.tables for t in TEMPLATES))
(33, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from advisor.core.errors import StatementTimeout
from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.statements.binding import BoundStatement
from workloads.datasets.sqlsource import all_to_dialect, to_dialect

SOURCE_DIALECT = "postgres"  # the dialect of the data generator and the templates (transpiled where they run)

SCALE = 0.05  # the bench's default

SCALE_ROWS = {"title": 500_000, "name": 800_000, "char_name": 400_000, "company_name": 100_000, "keyword": 60_000,
              "cast_info": 5_000_000, "movie_info": 3_000_000, "movie_info_idx": 600_000,
              "movie_companies": 1_200_000, "movie_keyword": 2_000_000, "aka_name": 200_000, "movie_link": 50_000,
              "person_info": 600_000}

KINDS = ("movie", "tv series", "tv movie", "video movie", "tv mini series", "video game", "episode")
ROLES = ("actor", "actress", "producer", "writer", "cinematographer", "composer", "costume designer", "director",
         "editor", "miscellaneous crew", "production designer", "guest")
COMPANY_KINDS = ("distributors", "production companies", "special effects companies", "miscellaneous companies")
LINKS = ("follows", "followed by", "remake of", "remade as", "references", "referenced in", "spoofs", "spoofed in",
         "features", "featured in", "spin off from", "spin off", "version of", "similar to", "edited into",
         "edited from", "alternate language version of", "unknown link")
INFOS = {1: "runtimes", 2: "color info", 3: "genres", 4: "languages", 8: "countries", 16: "release dates",
         17: "trivia", 19: "mini biography", 22: "height", 98: "budget", 99: "votes", 100: "rating",
         112: "top 250 rank", 113: "bottom 10 rank"}
GENRES = ("Drama", "Comedy", "Documentary", "Short", "Thriller", "Action", "Romance", "Horror", "Crime", "Family",
          "Adventure", "Animation", "Sci-Fi", "Mystery", "Fantasy", "Music", "War", "Western", "Biography", "History")
COUNTRIES = ("USA", "UK", "Germany", "France", "Japan", "India", "Canada", "Italy", "Spain", "Sweden", "Brazil",
             "Denmark", "Norway", "Bulgaria", "Mexico")
CODES = ("[us]", "[gb]", "[de]", "[fr]", "[jp]", "[in]", "[ca]", "[it]", "[es]", "[se]", "[nl]", "[ru]")
KEYWORDS = ("sequel", "character-name-in-title", "murder", "based-on-novel", "superhero", "marvel-comics",
            "violence", "blood", "love", "revenge", "female-nudity", "independent-film", "hero", "computer-animation",
            "fight", "death", "friendship", "new-york-city", "police", "father-son-relationship")
NOTES = ("(voice)", "(uncredited)", "(producer)", "(executive producer)", "(writer)", "(voice: English version)")
COMPANY_NOTES = ("(USA)", "(worldwide)", "(theatrical)", "(co-production)", "(TV)", "(2006) (USA) (TV)",
                 "(as Metro-Goldwyn-Mayer Pictures)", "(presents)")


def _arr(values) -> str:
    return "ARRAY[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _pick(values, skew: float = 2.0) -> str:
    """SQL: one of ``values``, the first ones most often (a power-law draw)."""
    return f"({_arr(values)})[1 + floor(power(random(), {skew}) * {len(values)})::int]"


def _ref(table: str, n: dict[str, int], skew: float = 2.0) -> str:
    return f"1 + floor(power(random(), {skew}) * {n[table]})::int"


def _ddl(n: dict[str, int]) -> list[str]:
    infos = ", ".join(f"({i}, '{INFOS.get(i, f'info {i}')}')" for i in range(1, 114))
    lookups = [("kind_type", "kind", KINDS), ("role_type", "role", ROLES), ("company_type", "kind", COMPANY_KINDS),
               ("link_type", "link", LINKS)]
    out = [f"CREATE TABLE {t} (id integer PRIMARY KEY, {c} text NOT NULL)" for t, c, _ in lookups]
    out += [f"INSERT INTO {t} SELECT i, ({_arr(v)})[i] FROM generate_series(1, {len(v)}) i" for t, _, v in lookups]
    out += ["CREATE TABLE info_type (id integer PRIMARY KEY, info text NOT NULL)",
            f"INSERT INTO info_type VALUES {infos}",
            "CREATE TABLE title (id integer PRIMARY KEY, title text NOT NULL, imdb_index text, "
            "kind_id integer NOT NULL REFERENCES kind_type, production_year integer, episode_nr integer, "
            "season_nr integer, series_years text)",
            "INSERT INTO title SELECT i, 'Title ' || md5(i::text), CASE WHEN random() < 0.1 THEN 'I' END, k, "
            "CASE WHEN random() < 0.97 THEN 2025 - floor(power(random(), 2.5) * 125)::int END, "
            "CASE WHEN k = 7 THEN 1 + floor(random() * 40)::int END, CASE WHEN k = 7 THEN 1 + floor(random() * 12)::int "
            f"END, NULL FROM (SELECT i, (ARRAY[1,1,1,1,7,7,7,2,3,4,5,6])[1 + floor(random() * 12)::int] k "
            f"FROM generate_series(1, {n['title']}) i) s",
            "CREATE TABLE name (id integer PRIMARY KEY, name text NOT NULL, imdb_index text, gender text, "
            "name_pcode_cf text)",
            "INSERT INTO name SELECT i, 'Person ' || md5(i::text), NULL, "
            "CASE WHEN random() < 0.55 THEN 'm' WHEN random() < 0.8 THEN 'f' END, "
            f"chr(65 + floor(random() * 26)::int) || floor(random() * 1000)::int FROM generate_series(1, {n['name']}) i",
            "CREATE TABLE char_name (id integer PRIMARY KEY, name text NOT NULL)",
            f"INSERT INTO char_name SELECT i, CASE WHEN random() < 0.05 THEN {_pick(('Himself', 'Herself', 'Batman', 'Spider-Man', 'Iron Man', 'The Doctor', 'Nurse', 'Police Officer'))} "
            f"ELSE 'Character ' || md5(i::text) END FROM generate_series(1, {n['char_name']}) i",
            "CREATE TABLE company_name (id integer PRIMARY KEY, name text NOT NULL, country_code text)",
            f"INSERT INTO company_name SELECT i, 'Company ' || md5(i::text), {_pick(CODES, 3)} "
            f"FROM generate_series(1, {n['company_name']}) i",
            "CREATE TABLE keyword (id integer PRIMARY KEY, keyword text NOT NULL)",
            f"INSERT INTO keyword SELECT i, CASE WHEN i <= {len(KEYWORDS)} THEN ({_arr(KEYWORDS)})[i] "
            f"ELSE 'keyword-' || i END FROM generate_series(1, {n['keyword']}) i",
            "CREATE TABLE cast_info (id integer PRIMARY KEY, person_id integer NOT NULL REFERENCES name, "
            "movie_id integer NOT NULL REFERENCES title, person_role_id integer REFERENCES char_name, note text, "
            "nr_order integer, role_id integer NOT NULL REFERENCES role_type)",
            f"INSERT INTO cast_info SELECT i, {_ref('name', n, 1.5)}, {_ref('title', n)}, "
            f"CASE WHEN random() < 0.4 THEN {_ref('char_name', n, 1.5)} END, "
            f"CASE WHEN random() < 0.3 THEN {_pick(NOTES)} END, floor(random() * 30)::int, "
            f"1 + floor(power(random(), 2) * {len(ROLES)})::int FROM generate_series(1, {n['cast_info']}) i",
            "CREATE TABLE movie_info (id integer PRIMARY KEY, movie_id integer NOT NULL REFERENCES title, "
            "info_type_id integer NOT NULL REFERENCES info_type, info text NOT NULL, note text)",
            f"INSERT INTO movie_info SELECT i, m, it, CASE it WHEN 3 THEN {_pick(GENRES)} WHEN 8 THEN "
            f"{_pick(COUNTRIES, 3)} WHEN 4 THEN {_pick(('English', 'French', 'German', 'Japanese', 'Spanish'), 3)} "
            "WHEN 16 THEN 'USA:' || (1950 + floor(random() * 75)::int) WHEN 1 THEN (60 + floor(random() * 120)::int)::text "
            "ELSE '$' || floor(random() * 100000000)::int END, CASE WHEN random() < 0.1 THEN '(worldwide)' END "
            f"FROM (SELECT i, {_ref('title', n)} m, (ARRAY[3,3,3,8,8,4,16,16,1,98])[1 + floor(random() * 10)::int] it "
            f"FROM generate_series(1, {n['movie_info']}) i) s",
            "CREATE TABLE movie_info_idx (id integer PRIMARY KEY, movie_id integer NOT NULL REFERENCES title, "
            "info_type_id integer NOT NULL REFERENCES info_type, info text NOT NULL, note text)",
            f"INSERT INTO movie_info_idx SELECT i, m, it, CASE it WHEN 100 THEN to_char(1 + random() * 9, 'FM9.0') "
            "WHEN 99 THEN floor(power(random(), 3) * 500000)::int::text ELSE (1 + floor(random() * 250)::int)::text END, "
            f"NULL FROM (SELECT i, {_ref('title', n)} m, (ARRAY[99,99,100,100,100,112])[1 + floor(random() * 6)::int] it "
            f"FROM generate_series(1, {n['movie_info_idx']}) i) s",
            "CREATE TABLE movie_companies (id integer PRIMARY KEY, movie_id integer NOT NULL REFERENCES title, "
            "company_id integer NOT NULL REFERENCES company_name, company_type_id integer NOT NULL "
            "REFERENCES company_type, note text)",
            f"INSERT INTO movie_companies SELECT i, {_ref('title', n)}, {_ref('company_name', n, 3)}, "
            f"1 + floor(random() * 2.2)::int, CASE WHEN random() < 0.6 THEN {_pick(COMPANY_NOTES)} END "
            f"FROM generate_series(1, {n['movie_companies']}) i",
            "CREATE TABLE movie_keyword (id integer PRIMARY KEY, movie_id integer NOT NULL REFERENCES title, "
            "keyword_id integer NOT NULL REFERENCES keyword)",
            f"INSERT INTO movie_keyword SELECT i, {_ref('title', n)}, {_ref('keyword', n, 3)} "
            f"FROM generate_series(1, {n['movie_keyword']}) i",
            "CREATE TABLE aka_name (id integer PRIMARY KEY, person_id integer NOT NULL REFERENCES name, name text)",
            f"INSERT INTO aka_name SELECT i, {_ref('name', n, 1.5)}, 'Alias ' || md5(i::text) "
            f"FROM generate_series(1, {n['aka_name']}) i",
            "CREATE TABLE movie_link (id integer PRIMARY KEY, movie_id integer NOT NULL REFERENCES title, "
            "linked_movie_id integer NOT NULL REFERENCES title, link_type_id integer NOT NULL REFERENCES link_type)",
            f"INSERT INTO movie_link SELECT i, {_ref('title', n)}, {_ref('title', n)}, "
            f"1 + floor(power(random(), 2) * {len(LINKS)})::int FROM generate_series(1, {n['movie_link']}) i",
            "CREATE TABLE person_info (id integer PRIMARY KEY, person_id integer NOT NULL REFERENCES name, "
            "info_type_id integer NOT NULL REFERENCES info_type, info text NOT NULL, note text)",
            f"INSERT INTO person_info SELECT i, {_ref('name', n, 1.5)}, (ARRAY[19,19,22,17])[1 + floor(random() * 4)::int], "
            f"'info ' || md5(i::text), NULL FROM generate_series(1, {n['person_info']}) i"]
    return out


def load(target: Connector, scale: float = SCALE, seed: int = 0,
         progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """The schema and its data at ``scale`` in the empty database at ``target`` (its connector; the same
    ``seed`` gives the same data: the server's random generator is seeded first, in the session that generates),
    vacuumed and analyzed over every row below SF 0.06, beyond it over 300,000-row samples of the larger tables
    (``whole_table_target``: ANALYZE's default sample of 30,000 rows gave two loads of the same data different
    plans for 3 of the 33 statements, so one bench run could not be compared with another). Returns the row count
    of each generated table."""
    say = progress or (lambda _msg: None)
    connector = loader_connector(target)
    n = {t: max(20, int(rows * scale)) for t, rows in SCALE_ROWS.items()}
    statements = _ddl(n)
    script = [f"SELECT setseed({(seed % 1000) / 1000.0!r})", *statements]

    def before(i: int, statement: str) -> None:
        if statement.startswith("INSERT"):
            say(f"JOB data {i - 1}/{len(statements)}: {statement.split()[2]}")

    connector.loader().run_script(all_to_dialect(script, SOURCE_DIALECT, connector.dialect), before=before)
    stats_target = whole_table_target(n)
    say(f"analyzing every row (statistics target {stats_target})")
    connector.loader().analyze(statistics_target=stats_target)
    return n


MAX_TARGET = 1000  # see whole_table_target


def whole_table_target(rows: dict[str, int]) -> int:
    """The statistics target at which ANALYZE reads every row of the largest table (it samples 300 x target rows),
    so its statistics do not depend on a random sample; at least PostgreSQL's default, at most ``MAX_TARGET``: a
    target is also the length of each column's most-common-values list, and PostgreSQL 15 estimates a join by
    comparing two such lists pairwise, so at SF 0.3 (target 5,000) planning a JOB join took 80 ms (median of the
    33) against 7.7 ms at 1,000 and 2 ms at the default 100. At 1,000, tables up to 300,000 rows are read whole and
    larger ones sampled at 300,000 rows.

    >>> whole_table_target({"cast_info": 250_000, "title": 25_000}), whole_table_target({"t": 20})
    (834, 100)
    >>> whole_table_target({"cast_info": 1_500_000})
    1000
    """
    return max(100, min(MAX_TARGET, -(-max(rows.values()) // 300)))


# --- templates ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Tables joined to ``title t`` (or to a block before it), with the predicates that join them and filter
    variants (literal constants), one of which a template takes."""

    tables: tuple[str, ...]
    joins: tuple[str, ...]
    filters: tuple[str, ...]
    shows: str  # a column the query reports (MIN)
    needs: str | None = None


BLOCKS = {
    "kt": Block(("kind_type kt",), ("kt.id = t.kind_id",),
                ("kt.kind = 'movie'", "kt.kind IN ('episode', 'tv series')", "kt.kind = 'tv movie'"), "kt.kind"),
    "mk": Block(("movie_keyword mk", "keyword k"), ("mk.movie_id = t.id", "k.id = mk.keyword_id"),
                ("k.keyword = 'sequel'", "k.keyword IN ('superhero', 'marvel-comics', 'hero', 'fight')",
                 "k.keyword LIKE '%murder%'", "k.keyword IN ('violence', 'blood', 'death', 'revenge')",
                 "k.keyword = 'character-name-in-title'"), "k.keyword"),
    "mc": Block(("movie_companies mc", "company_name cn", "company_type ct"),
                ("mc.movie_id = t.id", "cn.id = mc.company_id", "ct.id = mc.company_type_id"),
                ("cn.country_code = '[us]' AND ct.kind = 'production companies'",
                 "cn.country_code = '[de]' AND mc.note LIKE '%(theatrical)%'",
                 "ct.kind = 'distributors' AND cn.country_code <> '[us]' AND mc.note IS NOT NULL",
                 "cn.country_code = '[jp]'", "mc.note LIKE '%(co-production)%' AND ct.kind = 'production companies'"),
                "cn.name"),
    "mi": Block(("movie_info mi", "info_type it1"), ("mi.movie_id = t.id", "it1.id = mi.info_type_id"),
                ("it1.info = 'genres' AND mi.info IN ('Horror', 'Thriller')", "it1.info = 'countries' AND "
                 "mi.info IN ('Sweden', 'Norway', 'Denmark')", "it1.info = 'genres' AND mi.info = 'Western'",
                 "it1.info = 'release dates' AND mi.info LIKE 'USA:199%'", "it1.info = 'languages' AND "
                 "mi.info = 'Japanese'"), "mi.info"),
    "mii": Block(("movie_info_idx mi_idx", "info_type it2"), ("mi_idx.movie_id = t.id", "it2.id = mi_idx.info_type_id"),
                 ("it2.info = 'rating' AND mi_idx.info > '8.0'", "it2.info = 'top 250 rank'",
                  "it2.info = 'rating' AND mi_idx.info < '3.0'", "it2.info = 'votes' AND mi_idx.info > '1000'"),
                 "mi_idx.info"),
    "ci": Block(("cast_info ci", "name n", "role_type rt"),
                ("ci.movie_id = t.id", "n.id = ci.person_id", "rt.id = ci.role_id"),
                ("rt.role = 'actress' AND n.gender = 'f' AND ci.note = '(voice)'",
                 "rt.role = 'writer' AND n.name_pcode_cf LIKE 'B1%'", "rt.role = 'director' AND n.gender = 'm'",
                 "ci.note IN ('(producer)', '(executive producer)') AND rt.role = 'producer'",
                 "rt.role = 'composer' AND n.name LIKE 'Person a%'"), "n.name"),
    "chn": Block(("char_name chn",), ("chn.id = ci.person_role_id",),
                 ("chn.name IN ('Batman', 'Spider-Man', 'Iron Man')", "chn.name = 'Himself'",
                  "chn.name LIKE '%Doctor%'"), "chn.name", "ci"),
    "an": Block(("aka_name an",), ("an.person_id = n.id",), ("an.name LIKE 'Alias 0%'", "an.name LIKE 'Alias f%'"),
                "an.name", "ci"),
    "ml": Block(("movie_link ml", "link_type lt"), ("ml.movie_id = t.id", "lt.id = ml.link_type_id"),
                ("lt.link LIKE '%follow%'", "lt.link IN ('remake of', 'remade as')", "lt.link = 'spoofs'"), "lt.link"),
    "pi": Block(("person_info pi", "info_type it3"), ("pi.person_id = n.id", "it3.id = pi.info_type_id"),
                ("it3.info = 'mini biography'", "it3.info = 'height' AND pi.info LIKE 'info 0%'"), "pi.info", "ci"),
}

YEARS = ("t.production_year > 2005", "t.production_year BETWEEN 1990 AND 2000", "t.production_year > 2010",
         "t.production_year BETWEEN 1950 AND 1980", "t.production_year = 2008", "t.production_year < 1960")

SHAPES = (
    "mk kt", "mk mc", "mk mi", "mk mii", "mc mii", "mc mi", "mc kt", "mi mii", "ci kt", "ci mk", "ci mc",
    "ci chn mc", "ci an", "ci an mk", "ci chn mk kt", "mk mc mi", "mk mc mii", "mk mc mii kt", "mi mii mk",
    "mi mii mc kt", "ml mk", "ml mc mk", "ml mc mk kt", "ci pi mk", "ci pi an", "ci mi mii", "ci mk mi mii",
    "ci chn mc mi", "ci chn an mc kt", "ci mk mc mi kt", "mc mi mii kt", "ml mi mii kt", "ci an chn mk mii",
)


@dataclass(frozen=True)
class JobTemplate:
    key: str
    sql: str
    tables: int


def _template(i: int, shape: str) -> JobTemplate:
    rng = random.Random(1000 + i)
    blocks = [BLOCKS[b] for b in shape.split()]
    tables = ["title t"] + [t for b in blocks for t in b.tables]
    where = [j for b in blocks for j in b.joins] + [rng.choice(b.filters) for b in blocks]
    if rng.random() < 0.7:
        where.append(rng.choice(YEARS))
    shows = ", ".join(f"MIN({c}) AS {c.replace('.', '_')}" for c in ["t.title"] + [b.shows for b in blocks[:2]])
    text = f"SELECT {shows}\nFROM {', '.join(tables)}\nWHERE " + "\n  AND ".join(where)
    return JobTemplate(f"job.{i + 1:02d}", text, len(tables))


TEMPLATES: tuple[JobTemplate, ...] = tuple(_template(i, s) for i, s in enumerate(SHAPES))


def statements() -> list[BoundStatement]:
    """The 33 queries, executable as they are (literal constants)."""
    return [BoundStatement(t.key, t.sql, t.sql, 1.0, "literal", False) for t in TEMPLATES]


def drive(target: Connector, rounds: int = 1, timeout_ms: int = 120_000) -> int:
    """Run every query ``rounds`` times (filling the engine's statement statistics, and pg_qualstats on
    PostgreSQL); returns the queries that finished (one that times out is still counted by the server)."""
    connector = loader_connector(target)
    texts = [to_dialect(t.sql, SOURCE_DIALECT, connector.dialect) for t in TEMPLATES]
    ran = 0
    with connector.session(timeout_ms) as session:
        for _ in range(rounds):
            for text in texts:
                try:
                    session.run(text)
                    ran += 1
                except StatementTimeout:
                    pass
    return ran
