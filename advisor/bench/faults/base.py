"""One fault case of ``advisor bench faults`` and what it found.

A case is a small class: ``setup`` (what the fault needs: runs, recommendations; the store is free afterwards),
then ``inject``, ``detect`` and ``recover`` in order, and ``teardown`` (always: stop what the case started). Each
step records on ``self.outcome``: booleans with one line saying how, seconds to recover, rows a case knows were lost
beyond what the ledger shows, and servers left running (orphans). The verdict: *recovered* when the fault was
injected, detected and recovered; *refused* when it was injected and refused with a clear reason (recovery is not
what the advisor should do there); *skipped* when the case found that its fault cannot be placed on this engine (it
says why: ``skip``); else *FAILED*. Lost rows or orphans make any verdict FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar


@dataclass
class Outcome:
    name: str
    title: str
    injected: bool = False
    injected_how: str = ""
    detected: bool = False
    detected_how: str = ""
    recovered: bool = False
    refused: bool = False  # detected and refused with a clear reason
    recovered_how: str = ""
    recover_s: float | None = None
    lost: dict[str, int] = field(default_factory=lambda: {"trials": 0, "recommendations": 0, "audit": 0})
    orphans: list[str] = field(default_factory=list)
    error: str | None = None  # the bench could not complete the case
    skipped: str = ""  # why the fault cannot be placed on this engine (the case found it so)
    details: dict = field(default_factory=dict)
    started: float = 0.0
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        clean = not any(self.lost.values()) and not self.orphans and self.error is None
        if clean and self.injected and self.detected and self.recovered:
            return "recovered"
        if clean and self.injected and self.detected and self.refused:
            return "refused"
        if clean and self.skipped and not self.injected:
            return "skipped"
        return "FAILED"

    def doc(self) -> dict:
        return {"name": self.name, "title": self.title, "verdict": self.verdict, "injected": self.injected,
                "injected_how": self.injected_how, "detected": self.detected, "detected_how": self.detected_how,
                "recovered": self.recovered, "refused": self.refused, "recovered_how": self.recovered_how,
                "recover_s": None if self.recover_s is None else round(self.recover_s, 2), "lost": self.lost,
                "orphans": self.orphans, "error": self.error, "skipped": self.skipped, "details": self.details,
                "seconds": self.seconds}


class Fault:
    """Base of the cases: every step does nothing unless the case says otherwise."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""

    def __init__(self) -> None:
        self.outcome = Outcome(self.name, self.title)
        self.extra_dirs: tuple[Path, ...] = ()  # besides the bench's tmp/, where this case's shadows may live

    def setup(self, env) -> None:
        pass

    def inject(self, env) -> None:
        pass

    def detect(self, env) -> None:
        pass

    def recover(self, env) -> None:
        pass

    def teardown(self, env) -> None:
        pass

    # --- recording --------------------------------------------------------------------------------------------

    def skip(self, why: str) -> None:
        """The fault cannot be placed on this engine (found while trying): nothing more is done but teardown."""
        self.outcome.injected, self.outcome.skipped = False, why

    def injected(self, how: str) -> None:
        self.outcome.injected, self.outcome.injected_how = True, how

    def detected(self, ok: bool, how: str) -> None:
        self.outcome.detected, self.outcome.detected_how = ok, how

    def recovered(self, ok: bool, how: str, seconds: float | None = None, *, refused: bool = False) -> None:
        """``refused``: the advisor refused the faulty input or state with a clear reason (``ok``), rather than
        recovering from it. ``seconds``: from the fault to the recovery (or the refusal)."""
        self.outcome.recovered, self.outcome.recovered_how = ok and not refused, how
        self.outcome.refused = refused and ok
        if seconds is not None:
            self.outcome.recover_s = max(0.0, seconds)

    def orphaned(self, dirs) -> None:
        self.outcome.orphans += [str(d) for d in dirs]
