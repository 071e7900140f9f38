"""No silent step (issue 43): the heartbeat speaks while a blocking call runs, and stops with it; the CLI entry
keeps known library warnings off the terminal and lets the project's own through."""

import subprocess
import sys
import threading

import pytest

from advisor.core.progress import heartbeat


def test_the_heartbeat_speaks_while_a_blocking_call_waits_and_stops_with_it():
    seen: list[str] = []
    heard = threading.Event()

    def say(line: str) -> None:
        seen.append(line)
        if line.startswith("still "):
            heard.set()

    with heartbeat(say, "compiling the learned index", every_s=0.05) as inner:
        inner("compiling")
        # the blocking call: it ends only once the heartbeat has said its line (not by any clock of ours)
        assert heard.wait(60), "the heartbeat never spoke while the call blocked"
    assert seen[0] == "compiling" and seen[1].startswith("still compiling the learned index (")
    assert seen[1].endswith(" s)")
    assert not any(t.name == "heartbeat" and t.is_alive() for t in threading.enumerate())


def test_a_progress_callback_that_raises_on_the_heartbeat_ends_the_block():
    class Cancelled(Exception):
        pass

    spoke = threading.Event()

    def say(line: str) -> None:
        if line.startswith("still "):
            spoke.set()
            raise Cancelled("the run was cancelled")

    with pytest.raises(Cancelled):
        with heartbeat(say, "training", every_s=0.05) as inner:
            assert spoke.wait(60)
            inner("next step")  # the callback's error reaches the block's own thread here


KNOWN_AND_OURS = r'''
import sys, warnings
from advisor.cli import main as cli

@cli.app.command("warn-probe")
def probe() -> None:
    from scipy.stats import qmc
    qmc.Sobol(2, scramble=True, seed=0).random(3)  # scipy: "balance properties ... power of 2"
    warnings.warn("a warning of our own", UserWarning)
    print("probe ran")

sys.exit(cli.main(["warn-probe"]))
'''


def test_the_cli_entry_keeps_library_warnings_off_the_terminal_but_not_our_own():
    out = subprocess.run([sys.executable, "-W", "default", "-c", KNOWN_AND_OURS], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "probe ran" in out.stdout
    assert "Sobol" not in out.stderr and "power of 2" not in out.stderr
    assert "a warning of our own" in out.stderr  # the filters are narrow: the project's own warnings still show


def test_a_watched_reporter_says_it_is_still_working_when_nothing_else_speaks():
    """The benches' and training's reporter (``reporter(watch=True)``): a long call that says nothing is followed
    by a ``still working`` line after the heartbeat's wait, not by silence (waited for, not timed)."""
    import io
    import time

    from advisor.core.progress import reporter

    out = io.StringIO()
    say = reporter(out, watch=True)
    say("training")
    deadline = time.monotonic() + 60
    while "still working (" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("] training") and "still working (" in lines[1] and "since the last line)" in lines[1]
    quiet = io.StringIO()
    reporter(quiet, quiet=True, watch=True)("nothing shown")
    assert quiet.getvalue() == ""
