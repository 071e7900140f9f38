"""A statement's rewrite race as its run's trial record (``advisor.tuning.trials.Ledger``): the key of what was
raced (``race_key``: the statement and its candidate forms) and the outcome stored with it (``outcome_doc``) and
read back (``outcome_from``), so a resumed rewrite run reuses a race it finished instead of timing it again."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from advisor.core.domain import QueryRewrite, TrialResult
from advisor.core.progress import Say
from advisor.core.sqltext import named
from advisor.storage import codec
from advisor.tuning.evidence import ArmRound
from advisor.tuning.ledger import Ledger


def raced(ledger: Ledger, st, forms: list[QueryRewrite], outcome: type, say: Say, race: Callable[[], object]):
    """The race of ``st`` (a bound statement) against its candidate ``forms``: the one the run's ``ledger``
    stored for the same forms (a resumed run: not timed again), else ``race()``, stored as it ends."""
    key = race_key(st.queryid, st.sql, forms)
    row = ledger.recall(key)
    if row is not None:  # raced before the run was interrupted: its outcome stands
        say(f"{named(st.sql, st.queryid)}: raced before the run was interrupted; reusing stored trial "
            f"{row['number'] + 1}, not timing it again")
        return outcome_from(row["metrics"], outcome)
    started = time.perf_counter()
    found = race()
    ledger.record(key, "race", result_of(found), changes=forms, duration_s=time.perf_counter() - started)
    return found


def race_key(queryid: str, sql: str, forms: list[QueryRewrite]) -> dict[str, str]:
    """What a race measured: the statement, a digest of its text (other constants: another race) and one of its
    candidate forms (other forms: another race).

    >>> race_key("q1", "SELECT 1", [QueryRewrite("q1", "SELECT 1", "SELECT 2")])["forms"]
    '1 form(s), 320f98bc00f7'
    """
    digest = hashlib.sha1("\n;\n".join(f.rewritten for f in forms).encode()).hexdigest()[:12]
    return {"validation": "rewrite race", "statement": queryid, "sql": hashlib.sha1(sql.encode()).hexdigest()[:12],
            "forms": f"{len(forms)} form(s), {digest}"}


def result_of(outcome) -> TrialResult:
    """The race as a trial's result: its objective the chosen rewrite's time over the original's (None when none
    was chosen), the whole outcome in its metrics."""
    objective = 1.0 / outcome.speedup if outcome.speedup else None
    return TrialResult(objective, metrics={"outcome": codec.plain(outcome)})


def outcome_from(metrics: dict, outcome: type):
    """The ``outcome`` (the pipeline's ``Outcome`` class) a race's trial record stored (``result_of``)."""
    d = dict(metrics["outcome"])
    tuples = ("rules", "ci", "plan_cost", "checked_on", "rejected")
    d.update({k: tuple(d[k]) for k in tuples if d.get(k) is not None})
    d["passes"] = tuple(tuple(ArmRound(dict(p["samples"]), dict(p["errors"])) for p in side)
                        for side in d.get("passes") or ())
    return outcome(**d)
