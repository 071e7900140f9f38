"""Ids and commands a DBA pastes (issue 44, item 4): on a narrow terminal the lists show ids whole, every command
that takes a recommendation's, a run's or a schedule's id takes a unique prefix of it (an ambiguous or unknown one
is refused in one line), and a suggested command is printed on a line of its own, never wrapped.

The store is a real one, seeded through ``Store`` (no server needed to list, show or approve)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from rich.console import Console

from advisor.cli import render
from advisor.tuning import kinds
from advisor.core.domain import IndexChange, Recommendation
from advisor.storage.store import Store
from advisor.tuning.all.pipeline import WholeResult

ONE, TWIN, OTHER = "272ce5a1b2c3", "272ce5ff0011", "9abc00000001"  # the first two share the prefix 272ce5
RUN = "5e7d00a4b9c1"


def _rec(rec_id: str, state: str) -> Recommendation:
    change = IndexChange("public", "orders", ("customer_id",))
    return Recommendation(rec_id, "t-1", "indexes", "extend", (change,),
                          ("CREATE INDEX advisor_orders_customer_id ON orders (customer_id)",),
                          ("DROP INDEX advisor_orders_customer_id",), False, state, time.time())


@pytest.fixture
def store_env(tmp_path) -> dict:
    path = tmp_path / "advisor.duckdb"
    store = Store(path)
    try:
        for rec_id in (ONE, TWIN, OTHER):
            store.add_recommendation(_rec(rec_id, "validated"))
        store.add_run(RUN, "t-1", "indexes", "extend", {}, state="done")
    finally:
        store.close()
    base = {k: v for k, v in os.environ.items() if k != "ADVISOR_TARGET_DSN"}
    return {**base, "ADVISOR_STORE": str(path), "ADVISOR_KEY_FILE": str(tmp_path / "secret.key"), "TMPDIR": str(tmp_path)}


def cli(env: dict, *args: str, columns: int = 80) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=120,
                          env={**env, "COLUMNS": str(columns), "TERM": "dumb"})


@pytest.mark.parametrize("columns", [80, 60])
def test_the_lists_show_ids_whole_on_a_narrow_terminal(store_env, columns):
    listed = cli(store_env, "recommendations", "list", columns=columns)
    assert listed.returncode == 0, listed.stderr
    assert max(len(line) for line in listed.stdout.splitlines()) <= columns
    for rec_id in (ONE, TWIN, OTHER):
        assert rec_id in listed.stdout
    runs = cli(store_env, "runs", "list", columns=columns)
    assert runs.returncode == 0 and RUN in runs.stdout, runs.stderr


def test_a_unique_prefix_works_where_an_id_is_taken_and_others_are_refused_in_one_line(store_env):
    shown = cli(store_env, "recommendations", "show", "9abc")
    assert shown.returncode == 0, shown.stderr
    assert f"Recommendation {OTHER}" in shown.stdout
    approved = cli(store_env, "recommendations", "approve", "272ce5a1")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == f"recommendation {ONE} is now approved"
    history = cli(store_env, "recommendations", "show", "272ce5a1", "--json")
    assert '"approved"' in history.stdout and "approve" in history.stdout  # its history found by the whole id
    run = cli(store_env, "runs", "show", RUN[:6])
    assert run.returncode == 0 and f"run {RUN}" in run.stdout, run.stderr

    ambiguous = cli(store_env, "recommendations", "approve", "272ce5")
    assert ambiguous.returncode == 1 and ambiguous.stdout == ""
    assert ambiguous.stderr.splitlines() == [f"error: '272ce5' starts the ids of several recommendations ({ONE}, "
                                             f"{TWIN}): give more of the id"]
    unknown = cli(store_env, "recommendations", "show", "ffff00")
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines() == ["error: no recommendation with an id starting with 'ffff00'"]
    whole_unknown = cli(store_env, "runs", "show", "ffff00000000")
    assert whole_unknown.stderr.splitlines() == ["error: no tuning run with id 'ffff00000000'"]


@pytest.mark.parametrize("width", [80, 60, 40])
def test_suggested_commands_are_each_on_one_line_at_any_width(width):
    """The whole advisor's last lines: approve, then apply, each a command of its own, whole on its line."""
    recs = (_rec(ONE, "validated"), _rec(OTHER, "validated"))
    console = Console(width=width, record=True, force_terminal=False)
    whole = WholeResult(steps=(), recommendations=recs, message="done")
    render.report(console, kinds.get("all").shown(whole), result=whole)
    lines = [line.strip() for line in console.export_text().splitlines()]
    for rec_id in (ONE, OTHER):
        assert f"advisor recommendations approve {rec_id}" in lines
        assert f"advisor recommendations apply {rec_id}" in lines
    assert not [line for line in lines if "&&" in line or line in ("advisor recommendations", "apply")]
