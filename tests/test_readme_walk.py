"""A newcomer's walk through the README's quick start (issue 44): the playground in one process, then every
command of "terminal 2" as the README writes it, at 80 columns, with a fresh store. It fails on a command that
fails, on a line wider than the terminal, on a sentence cut inside its bracket, and on a suggested command broken
over two lines. Slow (the playground's shop and a whole tune): run with ``-m slow``."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
COLUMNS = 80


def _terminal_two() -> list[str]:
    """The commands of the README's "In terminal 2" block, each whole (its comment and continuation lines off)."""
    text = README.read_text()
    block = text[text.index("In terminal 2"):]
    block = block[block.index("```sh") + 5:block.index("```", block.index("```sh") + 5)]
    return [line.split("  #")[0].strip() for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _bracket_cut(text: str) -> list[str]:
    """The paragraphs of ``text`` (outside tables, and away from a shortened SQL text's "…") whose brackets do
    not close: a sentence cut inside its bracket."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        if "…" in para:  # a shortened SQL text may end inside its own bracket
            continue
        lines = [ln for ln in para.splitlines() if not set(ln) & set("│┃┏┗━─╭╰")]
        joined = " ".join(lines)
        if joined.count("(") != joined.count(")"):
            out.append(joined)
    return out


def _broken_commands(text: str) -> list[str]:
    """Suggested commands broken over two lines: a line that is ``advisor`` and a group with nothing after it, or
    an approve/apply/show with no id."""
    bad = []
    for line in (ln.strip() for ln in text.splitlines()):
        words = line.split()
        if words[:1] == ["advisor"] and (len(words) < 3 or (words[1] == "recommendations" and words[2] in
                                                            ("approve", "apply", "show") and len(words) < 4)):
            bad.append(line)
    return bad


@pytest.mark.slow
def test_the_readme_s_quick_start_runs_as_written_at_80_columns(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADVISOR_")}
    env.update(ADVISOR_STORE=str(tmp_path / "advisor.duckdb"), ADVISOR_KEY_FILE=str(tmp_path / "secret.key"),
               COLUMNS=str(COLUMNS), TERM="dumb")
    playground = subprocess.Popen([sys.executable, "-m", "advisor", "playground"], stdout=subprocess.PIPE,
                                  stderr=(tmp_path / "playground.log").open("w"), text=True, env=env,
                                  start_new_session=True)
    try:
        dsn = playground.stdout.readline().strip()
        assert "password=" in dsn, (tmp_path / "playground.log").read_text()[-2000:]
        for command in _terminal_two():
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = dsn if name == "ADVISOR_TARGET_DSN" else shlex.split(value)[0]
                continue
            argv = shlex.split(command)
            assert argv[0] == ".venv/bin/advisor", command
            res = subprocess.run([sys.executable, "-m", "advisor", *argv[1:]], capture_output=True, text=True,
                                 env=env, timeout=900)
            assert res.returncode == 0, (command, res.stderr[-2000:])
            out = res.stdout
            assert "Traceback" not in out + res.stderr, command
            wide = [ln for ln in out.splitlines() if len(ln) > COLUMNS]
            assert not wide, (command, wide)
            assert not _bracket_cut(out), (command, _bracket_cut(out))
            assert not _broken_commands(out), (command, _broken_commands(out))
            assert dsn.split("password=")[1].split()[0] not in out + res.stderr, command  # no password shown
    finally:
        os.killpg(playground.pid, signal.SIGINT)
        try:
            playground.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(playground.pid, signal.SIGKILL)
