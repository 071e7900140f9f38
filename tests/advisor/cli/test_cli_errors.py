"""Bad input is refused before any work, in the words of whoever refused it: given SQL by the target's own parser
(PostgreSQL's message and position, naming the statement) before a snapshot or a shadow; a bad option value as a
usage error (exit 2) whose choices are the registry's, as the help lists them; progress on stderr under --json;
the CLI and REST take the same run options; help without reStructuredText markup."""

from __future__ import annotations

import json
import re

import pytest
import typer

from advisor.cli.main import app
from advisor.storage.store import Store
from advisor.tuning import kinds
from tests.conftest import run
from tests.advisor.cli.test_cli import advisor


@pytest.fixture(scope="module")
def shop(pg):
    dsn = pg.create_database("errors_shop")
    run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, total numeric NOT NULL)",
        "INSERT INTO orders SELECT x, x % 97 FROM generate_series(1, 2000) x", "ANALYZE orders")
    return dsn


@pytest.mark.parametrize("sql, message", [
    ("SELEC id FROM orders WHERE", 'statement 1: syntax error at or near "SELEC" (position 1)'),
    ("SELECT id FROM orders WHERE id >", "statement 1: syntax error at end of input (position 33)"),
    ("SELECT id FROM orders; SELECT id FROM orders WHERE id = 1 AND", "statement 2: syntax error at end of input (position 39)"),
    ("SELECT id FROM orders WHERE totl > 5", 'statement 1: column "totl" does not exist (position 29)'),
    ("SELECT id FROM order_lines", 'statement 1: relation "order_lines" does not exist (position 16)'),
])
def test_bad_sql_is_refused_before_any_work(shop, tmp_path, sql, message):
    store = tmp_path / "s.duckdb"
    # --register: had anything been done before the check, the target would be in the store
    res = advisor("rewrite", "--target", shop, "--register", "shop", "--sql", sql, "--json", store=store)
    assert res.returncode == 1 and res.stdout == "", res.stderr
    assert res.stderr.strip().splitlines() == [f"error: {message}"]  # one line, nothing done before it
    assert "<class" not in res.stderr and "Traceback" not in res.stderr
    assert Store(str(store)).targets() == []  # not even observed: no target, no snapshot, no shadow


@pytest.mark.parametrize("given, text", [("--sql", ""), ("--sql", "  \n "), ("--file", ""), ("--file", " \n\t\n")])
def test_blank_sql_is_refused_in_one_line_before_anything(tmp_path, given, text):
    """Issue 44, item 7: ``--sql ""`` or an empty ``--file`` once rewrote the workload's heaviest statements for
    minutes; blank is not "the workload" (``--workload`` says so): a usage error before the target is even read."""
    value = text
    if given == "--file":
        value = str(tmp_path / "empty.sql")
        (tmp_path / "empty.sql").write_text(text)
    store = tmp_path / "s.duckdb"
    res = advisor("rewrite", "--target", "host=127.0.0.1 port=1", "--register", "shop", given, value, store=store)
    where = f"--file {value}" if given == "--file" else "--sql"
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [f"error: {where} holds no SQL: give the statements to rewrite, or --workload "
                                       f"for the observed workload's heaviest (see advisor rewrite --help)"]
    assert not store.exists()  # nothing opened, observed or started


def test_sql_of_comments_only_is_refused_before_any_work(shop, tmp_path):
    (tmp_path / "comments.sql").write_text("-- the report query, to do\n/* later */ ;\n")
    store = tmp_path / "s.duckdb"
    res = advisor("rewrite", "--target", shop, "--register", "shop", "--file", str(tmp_path / "comments.sql"),
                  store=store)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.splitlines() == ["error: no SQL statement in the text given"]
    assert Store(str(store)).targets() == []  # not observed: no target, no snapshot, no shadow


def test_a_statement_the_target_takes_goes_on_with_progress_on_stderr_under_json(shop, tmp_path):
    res = advisor("rewrite", "--target", shop, "--register", "shop", "--sql", "SELECT id FROM orders WHERE total > 5",
                  "--json", "--optimizer", "greedy", "--no-validate", store=tmp_path / "s.duckdb")
    assert res.returncode == 0, res.stderr
    (st,) = json.loads(res.stdout)["statements"]  # stdout: the one document
    assert st["original"] == "SELECT id FROM orders WHERE total > 5"
    progress = [ln for ln in res.stderr.splitlines() if re.match(r"\[\s*\d+\.\ds\] ", ln)]
    assert any("observing" in ln for ln in progress) and any("pg_dump" in ln for ln in progress), res.stderr


@pytest.mark.parametrize("command, kind", [(["tune", "knobs"], "knobs"), (["tune", "indexes", "--budget-mb", "5"],
                                                                         "indexes"),
                                           (["rewrite", "--workload"], "rewrites")])
def test_an_unknown_optimizer_is_a_usage_error_naming_the_registrys_choices(tmp_path, command, kind):
    listed = kinds.get(kind).optimizer_names()
    res = advisor(*command, "--target", "host=127.0.0.1 port=1", "--optimizer", "foo", store=tmp_path / "s.duckdb")
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert tuple(re.findall(r"'(\w+)'", res.stderr.split("is not one of", 1)[1])) == listed
    shown = advisor(*command[:2], "--help", store=tmp_path / "s.duckdb", env={"COLUMNS": "400"}).stdout
    assert tuple(re.search(r"--optimizer\s+<([\w|]+)>", shown).group(1).split("|")) == listed


@pytest.mark.parametrize("args, message", [
    (["runs", "start", "--target", "t", "--kind", "knobs", "--optimizer", "foo"], "no knobs optimizer named 'foo'"),
    (["runs", "start", "--target", "t", "--kind", "knobs", "--range", "work_mem"], "expected NAME=LOW:HIGH"),
    (["runs", "start", "--target", "t", "--kind", "knobs", "--objective", "fast"], "objective 'fast'"),
    (["tune", "--target", "host=x", "--kinds", "vacuum"], "cannot be part of a whole run"),
    (["tune", "--target", "host=x", "--kinds", "indexs"], "'indexs' cannot be part of a whole run; did you mean "
                                                          "'indexes'?"),
    (["runs", "start", "--target", "t", "--kind", "knobs", "--optimizer", "hibos"], "did you mean 'hibo'?"),
    (["runs", "start", "--target", "t", "--kind", "nope"], "Invalid value for '--kind'"),
    (["runs", "list", "--state", "nope"], "'nope' is not one of 'queued', 'running', 'done'"),
    (["bench", "knobs", "--workloads", "joins,nope"], "unknown bench workload 'nope' (available: joins"),
    (["bench", "rewrite", "--optimizer", "nope"], "'nope' is not one of 'aurora'"),  # before any server starts
])
def test_option_values_checked_late_are_usage_errors_too(tmp_path, args, message):
    res = advisor(*args, store=tmp_path / "s.duckdb")
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines() == [ln for ln in res.stderr.strip().splitlines() if ln.startswith("error:")]


def _cli_options(command) -> set[str]:
    return {p.opts[0].lstrip("-").replace("-", "_") for p in command.params if p.opts and p.opts[0].startswith("--")}


# what only a process on the database's side of the CLI takes: where the target and store are, how to print, a
# run of this process to resume, the hardware and device of this machine (REST keeps them with the target and the
# server's settings), the CLI's other ways to give the SQL (a file it reads, or none: the workload), and the
# registration of a DSN's database (REST runs name registered targets only)
CLI_ONLY = {"target", "json", "store", "resume", "device", "memory_gb", "cores", "storage", "explain", "file",
            "workload", "help", "register"}


def test_the_cli_and_rest_take_the_same_run_options():
    from web.schemas import RUN_INS

    cli = typer.main.get_command(app)
    commands = {"knobs": cli.commands["tune"].commands["knobs"], "indexes": cli.commands["tune"].commands["indexes"],
                "rewrites": cli.commands["rewrite"], "all": cli.commands["tune"],
                "learned-index": cli.commands["tune"].commands["learned-index"]}
    assert set(commands) == set(kinds.names())  # every kind has its command
    for kind, command in commands.items():
        rest = {f.alias or name for name, f in RUN_INS[kind].model_fields.items()} - {"kind", "target"}
        taken = _cli_options(command) - CLI_ONLY
        assert taken <= rest, (kind, taken - rest)
    assert {"include", "exclude", "range", "allow_durability", "allow_unsafe", "objective"} <= _cli_options(
        cli.commands["tune"].commands["knobs"])


def _commands(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_help_has_no_restructuredtext_markup():
    for path, command in _commands(typer.main.get_command(app)):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            assert not re.search(r"``|:(param|func|class|meth|ref):", text), (path, text)


