"""The engine of the servers the demo, the playground and the benches start for themselves is an option
(``--engine``, postgres by default): an engine the factory does not support is refused in one line, before any
server starts (no traceback, no sandbox or work directory left behind)."""

from __future__ import annotations

import pytest
import typer

from advisor.cli.main import app
from connectors import factory
from tests.advisor.cli.test_cli import advisor

# the engines the advisor does not run (yet): MariaDB until its connector lands, and one it never knew
UNSUPPORTED = [e for e in ("mariadb", "oracle") if e not in factory.ENGINES]

COMMANDS = [("demo",), ("playground", "--seconds", "1"), ("bench", "knobs", "--workloads", "joins"),
            ("bench", "indexes", "--workloads", "app"), ("bench", "service"), ("bench", "faults"),
            ("bench", "rewrite", "--only", "q4"), ("bench", "rewrite", "--generated", "2")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_engine_not_supported_is_refused_in_one_line(tmp_path, command):
    engine = UNSUPPORTED[0]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    res = advisor(*command, "--engine", engine, store=tmp_path / "s.duckdb", env={"TMPDIR": str(tmp)})
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 1, res.stderr
    assert errors == [f"error: engine {engine} is not supported yet (supported: {', '.join(factory.ENGINES)})"], \
        res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert list(tmp.iterdir()) == []  # no sandbox, no work directory was made


def test_an_engine_never_known_is_refused_the_same_way(tmp_path):
    res = advisor("demo", "--engine", "oracle", store=tmp_path / "s.duckdb")
    assert res.returncode == 1 and "error: engine oracle is not supported yet (supported: " in res.stderr, res.stderr


def test_every_command_that_starts_servers_takes_the_engine():
    cli = typer.main.get_command(app)
    for command in COMMANDS:
        found = cli.commands[command[0]]
        if command[0] == "bench":
            found = found.commands[command[1]]
        engine = next(p for p in found.params if p.name == "engine")
        assert engine.opts == ["--engine"] and engine.default == "postgres", command
