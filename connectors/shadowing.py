"""The clone of a target into a shadow, written once for every engine: ``ShadowCopy``.

``ShadowCopy.create`` does what every engine's clone does alike: it checks the sample percent, starts a sandbox of
the engine with the target's tuning-relevant settings (and the caller's), copies the target's database into it,
whole or as a sample of its large tables, with the dump in a directory inside the sandbox's (so that it goes with
the sandbox, also when ``reap_orphans`` removes the sandbox of a killed advisor), says each step, and stops the
sandbox again when any step fails. An engine's ``shadow.py`` subclasses it and fills in hooks: ``sandbox_class``
and ``copy_tools`` (what a whole copy runs, as said), ``database`` (the target's database, from its DSN),
``copied_settings``, ``prepare`` (the database made in the shadow), ``copy_whole``, ``copy_sample`` and
``finish`` (statistics gathered, the ``Shadow``). ``run_program`` runs a client program (a dump, a restore) with
a time limit and says its failure in one line (``connectors.text.tool_error``).

Code above ``connectors`` calls ``connectors.factory.clone``, which comes to an engine's ``create_shadow``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from advisor.core.domain import KnobSpec
from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say
from connectors.text import tool_error

if TYPE_CHECKING:
    from connectors.base import Connector, Shadow
    from connectors.server import LocalServer

__all__ = ["DUMP_TIMEOUT_S", "ShadowCopy", "run_program", "said"]

DUMP_TIMEOUT_S = 3600.0  # a dump of the target, or its load into the shadow, gives up after this long


def said(tool: str, stderr: str | None, returncode: int) -> str:
    """What a failed client program said went wrong (``tool_error``: its own error lines, not the SQL it echoes),
    or its exit status when it said nothing."""
    return tool_error(tool, stderr) or f"it exited with status {returncode} and said nothing"


def run_program(tool: str, args: list[str], what: str | None = None, check: bool = True,
                **kwargs: Any) -> subprocess.CompletedProcess:
    """Run client program ``tool`` (``args``, its output captured as text) for at most ``DUMP_TIMEOUT_S``;
    SandboxError naming ``what`` (default: the tool) when it runs longer, or, with ``check``, when it fails."""
    what = what or tool
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, **kwargs)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"{what} did not end within {DUMP_TIMEOUT_S:.0f} s") from None
    if check and res.returncode != 0:
        raise SandboxError(f"{what} failed: {said(tool, res.stderr, res.returncode)}")
    return res


class ShadowCopy:
    """One copy of ``target``'s database into a new sandbox (``create``); the engine's subclass fills in the
    hooks. While ``create`` runs, ``sandbox`` is the shadow's server and ``dbname`` the copied database."""

    sandbox_class: ClassVar[type[LocalServer]]
    copy_tools: ClassVar[str]  # the programs a whole copy runs, as said ("pg_dump | pg_restore")

    def __init__(self, target: Connector, say: Say):
        self.target = target
        self.say = say
        self.params = self.parse_dsn(target.dsn)
        self.dbname = self.database()
        self.sandbox: LocalServer | None = None

    @classmethod
    def create(cls, target: Connector, *, sample_percent: float | None = None, sample_min_rows: int = 100_000,
               extra_settings: dict[str, str] | None = None, say: Say | None = None) -> Shadow:
        """A running shadow of ``target``'s database. ``sample_percent`` (0-100] samples the tables with more than
        ``sample_min_rows`` rows; what a sample breaks is the engine's to count (``restore_warnings``)."""
        say = say or (lambda _m: None)
        if sample_percent is not None and not 0 < sample_percent <= 100:
            raise AdvisorError(f"sample percent must be in (0, 100], got {sample_percent}")
        copy = cls(target, say)
        settings = copy.copied_settings(target.knob_catalog())
        settings.update(extra_settings or {})
        say(f"starting shadow server ({len(settings)} settings copied from the target)")
        copy.sandbox = sandbox = cls.sandbox_class("shadow", settings=settings).start()
        try:
            whole = sample_percent is None or sample_percent >= 100
            copy.prepare()
            with tempfile.TemporaryDirectory(prefix="dump-", dir=sandbox.root) as tmp:
                if whole:
                    say(f"copying the target's database ({cls.copy_tools})")
                    warnings = copy.copy_whole(Path(tmp))
                else:
                    say(f"copying the target's schema and a {sample_percent:g}% sample of large tables")
                    warnings = copy.copy_sample(Path(tmp), sample_percent, sample_min_rows)
            return copy.finish(whole, warnings)
        except BaseException:
            sandbox.stop()
            raise

    # --- the engine's hooks -------------------------------------------------------------------------------------

    @staticmethod
    def parse_dsn(dsn: str) -> dict:
        """The target DSN's parts."""
        raise NotImplementedError

    def database(self) -> str:
        """The target's database (from ``params``); AdvisorError when its DSN names none it can be told by."""
        raise NotImplementedError

    def copied_settings(self, catalog: dict[str, KnobSpec]) -> dict[str, str]:
        """The target's tuning-relevant settings the shadow starts with, in the engine's configuration syntax."""
        raise NotImplementedError

    def prepare(self) -> None:
        """The database ``dbname`` made in the shadow, to copy into."""
        raise NotImplementedError

    def copy_whole(self, tmp: Path) -> int:
        """The target's database copied whole (``tmp``: a directory for the dump); the errors ignored."""
        raise NotImplementedError

    def copy_sample(self, tmp: Path, percent: float, min_rows: int) -> int:
        """The target's schema, and ``percent`` of the rows of its tables with more than ``min_rows`` rows (the
        same rows each time); the errors ignored (constraints the sample breaks)."""
        raise NotImplementedError

    def finish(self, whole: bool, warnings: int) -> Shadow:
        """The copy readied for measurements (statistics gathered once, the statement statistics reset) and its
        ``Shadow``."""
        raise NotImplementedError
