"""Watching applied changes: every apply (by hand or by a schedule) starts a watch that rolls the change back when
the statements it was validated on get slower in production, as Azure SQL's automatic tuning does.

What is compared (like with like, production against production): the watched statements are the evidence's
statements (matched by queryid; every workload statement when the evidence names none). For each, the reference is
its mean latency before the apply (the engine's cumulative statement counters, recorded at apply time), and the
figure is its mean over the calls made since the apply (counters at the end of the apply, deltas since). A
statement is judged only with at least ``min_calls`` calls before the apply and since; one whose counters went
down (statistics reset, or evicted and re-added) is not judged. The verdict is the call-weighted ratio of all
judged statements: the time they took since the apply over the time they would have taken at their old means. A
ratio above ``1 + max_regression`` rolls the change back at once (audited ``watch_rollback`` with the figures,
then the ``rolled_back`` transition). A slowdown while other sessions wait for locks (``Connector.lock_waits``: a share of a few samples
taken at the check) is not held against the change (audited ``watch_deferred``): lock bursts from other sessions
slow the watched statements whatever the change is. The evidence's own per-statement baseline was measured on a shadow (perhaps
a sample of the data, timed by the client), so it is shown beside the figures (``expected``), never compared.

The watch lives in the recommendation's ``applied`` record (``applied["watch"]``; a recommendation applied before
watches existed has none and is not watched): ``state`` watching | held | unjudged | rolled_back | failed,
(or ended: its target was removed), ``started_at``, ``window_s``, ``min_calls``, ``max_regression``, the watched ``statements`` and their counters at
the start, ``checks`` and the ``last`` check's figures. When the window has passed, the next check is the last:
the watch ends ``held`` (judged, no regression; audited ``watch_held``) or ``unjudged`` (no statement ran enough
to judge; audited ``watch_unjudged``), or rolls back. A rollback that fails leaves the watch ``failed`` (audited);
it is tried again at each check until the window ends. Who checks: the server's ``Watcher`` timer, a schedule's
firing (for its target), and ``AdvisorService.check_watches`` (``advisor recommendations watch``), for a cron.
Settings: ADVISOR_WATCH_WINDOW_S, ADVISOR_WATCH_MIN_CALLS, ADVISOR_WATCH_MAX_REGRESSION, ADVISOR_WATCH_INTERVAL_S.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping

from advisor.core.domain import Recommendation
from advisor.core.errors import AdvisorError, NotFound
from advisor.core.wording import ratio
from advisor.service.auth import Principal
from connectors.base import Connector
from workloads.statements.capture import is_workload_statement

WATCHER = Principal("watcher", "operator")
ACTIVE = ("watching", "failed")
LOCKED_SHARE = 0.2  # lock waits in this share of the samples or more: a slowdown is not held against the change
TOP = 5  # per-statement figures kept in the audit and on the watch: the statements that cost most extra time
log = logging.getLogger("advisor.watch")


def counters(connector: Connector) -> dict[str, list[float]]:
    """queryid -> [calls, total_ms] of the target's workload statements, cumulative (the engine's statistics, read
    without opening a table: a check never waits for a lock another session holds on one)."""
    return {s.queryid: [s.calls, s.total_ms] for s in connector.statement_stats()
            if is_workload_statement(s.query)}


def begin(rec: Recommendation, applied: dict, start: Mapping[str, list[float]], settings) -> dict:
    """The watch an apply starts: the evidence's statements (or all when it names none) with their counters at
    ``start`` (read right after the apply), over the window the settings give."""
    ev = rec.evidence
    watched = sorted({s.queryid for s in ev.statements}) if ev is not None and ev.statements else None
    return {"state": "watching", "started_at": applied["at"], "window_s": float(settings.watch_window_s),
            "min_calls": int(settings.watch_min_calls), "max_regression": float(settings.watch_max_regression),
            "statements": watched,
            "start": {q: c for q, c in start.items() if watched is None or q in watched},
            "checks": 0, "last": None, "ended_at": None, "note": ""}


def started(w: dict) -> str:
    """The watch in the apply's note.

    >>> started({"window_s": 3600.0, "max_regression": 0.1, "statements": ["1", "2"], "min_calls": 20})
    'watched for 1 h: rolled back if its 2 statement(s) get over +10% slower'
    """
    span = f"{w['window_s'] / 3600:g} h" if w["window_s"] >= 3600 else f"{w['window_s'] / 60:g} min" \
        if w["window_s"] >= 60 else f"{w['window_s']:g} s"
    what = f"its {len(w['statements'])} statement(s)" if w["statements"] is not None else "the workload's statements"
    return f"watched for {span}: rolled back if {what} get over {w['max_regression']:+.0%} slower"


def judge(before: Mapping[str, list[float]], start: Mapping[str, list[float]], now: Mapping[str, list[float]],
          watched: Iterable[str] | None, min_calls: int, expected: Mapping[str, float] | None = None,
          texts: Mapping[str, str] | None = None) -> dict:
    """The figures of one check (pure). ``before``: counters before the apply (the reference means); ``start``:
    at the end of the apply; ``now``: now. ``ratio``: call-weighted mean latency since the apply over before (None
    when no statement could be judged); ``statements``: how many were judged; ``worst``: the judged statements
    that cost most extra time (each with its queryid and, from ``texts``, its SQL); ``not_judged``: queryid -> why.

    >>> f = judge({"a": [100, 100.0]}, {"a": [100, 100.0]}, {"a": [130, 190.0]}, None, 20)
    >>> round(f["ratio"], 2), f["statements"]
    (3.0, 1)
    >>> judge({"a": [100, 100.0]}, {"a": [100, 100.0]}, {"a": [110, 150.0]}, None, 20)["not_judged"]
    {'a': 'fewer than 20 calls since the apply (10)'}
    >>> judge({"a": [100, 100.0]}, {"a": [100, 100.0]}, {"a": [40, 90.0]}, None, 20)["not_judged"]
    {'a': 'its counters were reset since the apply'}
    """
    expected, texts = expected or {}, texts or {}
    after_ms = reference_ms = 0.0
    judged: list[dict] = []
    not_judged: dict[str, str] = {}
    for qid in sorted(watched if watched is not None else set(start) | set(before)):
        b, s, n = before.get(qid), start.get(qid, [0, 0.0]), now.get(qid)
        if not b or b[0] < min_calls or b[1] <= 0:
            if watched is not None or b:  # a statement new since the apply is no watched one
                not_judged[qid] = f"fewer than {min_calls} calls before the apply ({int(b[0]) if b else 0})"
            continue
        if n is None:
            if s[0] > 0:
                not_judged[qid] = "its counters were reset since the apply"
            continue  # not run since the apply: nothing to judge, nothing to say
        d_calls, d_ms = n[0] - s[0], n[1] - s[1]
        if d_calls < 0 or d_ms < 0:
            not_judged[qid] = "its counters were reset since the apply"
            continue
        if d_calls < min_calls:
            not_judged[qid] = f"fewer than {min_calls} calls since the apply ({int(d_calls)})"
            continue
        mean_before, mean_after = b[1] / b[0], d_ms / d_calls
        after_ms += d_ms
        reference_ms += d_calls * mean_before
        judged.append({"queryid": qid, "sql": texts.get(qid), "calls": int(d_calls), "before_ms": mean_before, "after_ms": mean_after,
                       "ratio": mean_after / mean_before, "extra_ms": d_ms - d_calls * mean_before,
                       "expected": expected.get(qid)})
    judged.sort(key=lambda j: -j["extra_ms"])
    return {"ratio": after_ms / reference_ms if reference_ms > 0 else None, "statements": len(judged),
            "after_ms": after_ms, "reference_ms": reference_ms, "worst": judged[:TOP],
            "not_judged": dict(list(not_judged.items())[:2 * TOP]), "not_judged_count": len(not_judged)}


def watch_of(rec: Recommendation) -> dict | None:
    """The recommendation's watch as shown (None when it has none), with ``ends_at``; a watch still open on a
    recommendation rolled back by hand reads ``stopped``."""
    w = (rec.applied or {}).get("watch")
    if not isinstance(w, dict):
        return None
    out = {k: v for k, v in w.items() if k != "start"}
    out["ends_at"] = w["started_at"] + w["window_s"]
    if w["state"] in ACTIVE and rec.state != "applied":
        out["state"], out["note"] = "stopped", "the recommendation was rolled back outside the watch"
    return out


def check_watches(service, target_id: str | None = None, now: float | None = None) -> list[dict]:
    """Check every applied recommendation under watch (of ``target_id``, or all): roll back a regression, end
    the watches whose window has passed. One statistics read per target. Returns one row per watch checked:
    ``id``, ``target_id``, ``state``, ``ratio``, ``statements``, ``ends_at``, ``note``."""
    store = service.store
    now = time.time() if now is None else now
    by_target: dict[str, list[Recommendation]] = {}
    for rec in store.recommendations("applied", target_id):
        w = (rec.applied or {}).get("watch")
        if isinstance(w, dict) and (w.get("state") == "watching"
                                    or (w.get("state") == "failed"
                                        and now < w.get("started_at", 0) + w.get("window_s", 0))):
            by_target.setdefault(rec.target_id, []).append(rec)
    rows = []
    for recs in by_target.values():
        try:
            connector = service.connector_for(recs[0])
            current = counters(connector)
        except NotFound as e:  # the target was removed: its watches end, once, with the reason
            rows += [_end_orphaned(store, rec, now, str(e)) for rec in recs]
            continue
        except AdvisorError as e:
            for rec in recs:
                store.audit(WATCHER.actor, "watch_failed", rec.id, {"error": str(e)})
                rows.append(_row(rec, rec.applied["watch"], f"not checked: {e}"))
            continue
        for rec in recs:
            try:
                rows.append(_check(service, rec, current, now, connector))
            except Exception as e:  # noqa: BLE001 - one watch that cannot be judged never stops the others
                why = str(e) if isinstance(e, AdvisorError) else f"internal error ({type(e).__name__}: {e})"
                store.audit(WATCHER.actor, "watch_failed", rec.id, {"error": why})
                rows.append(_row(rec, rec.applied["watch"], f"not checked: {why}"))
    return rows


def _row(rec: Recommendation, w: dict, note: str = "") -> dict:
    last = w.get("last") or {}
    return {"id": rec.id, "target_id": rec.target_id, "kind": rec.kind, "state": w["state"],
            "ratio": last.get("ratio"), "statements": last.get("statements", 0),
            "ends_at": w["started_at"] + w["window_s"], "note": note or w.get("note", "")}


def _end_orphaned(store, rec: Recommendation, now: float, why: str) -> dict:
    w = {**rec.applied["watch"], "state": "ended", "ended_at": now,
         "note": f"its target is no longer registered ({why}): the change stays applied, unwatched"}
    store.audit(WATCHER.actor, "watch_ended", rec.id, {"reason": w["note"]})
    _save(store, rec.id, w)
    return _row(rec, w)


def attributed(ratio: float | None, limit: float, lock_share: float | None) -> bool:
    """Whether a slowdown is the change's: over the limit, and not while other sessions were waiting for locks
    in at least ``LOCKED_SHARE`` of the samples (lock waits slow the watched statements whatever the change is).

    >>> attributed(1.8, 1.1, 0.0), attributed(1.8, 1.1, 0.8), attributed(1.05, 1.1, 0.0), attributed(1.8, 1.1, None)
    (True, False, False, True)
    """
    return ratio is not None and ratio > limit and (lock_share is None or lock_share < LOCKED_SHARE)


def _lock_share(connector: Connector | None) -> float | None:
    if connector is None:
        return None
    try:
        return connector.lock_waits()
    except AdvisorError:
        return None  # unknown: the slowdown is judged on the figures alone


def _check(service, rec: Recommendation, current: dict, now: float, connector: Connector | None = None) -> dict:
    store = service.store
    w = dict(rec.applied["watch"])
    ev = rec.evidence
    expected = {s.queryid: s.ratio for s in ev.statements} if ev is not None else {}
    texts = {s.queryid: s.sql for s in ev.statements} if ev is not None else {}
    figures = judge(rec.applied.get("statements_before") or {}, w.get("start") or {}, current, w["statements"],
                    w["min_calls"], expected, texts)
    limit = 1.0 + w["max_regression"]
    over = now >= w["started_at"] + w["window_s"]
    detail = {**figures, "limit": limit, "window_ends_at": w["started_at"] + w["window_s"], "applied_by":
              rec.applied.get("by")}
    w["checks"] = int(w.get("checks") or 0) + 1
    w["last"] = {"at": now, **{k: figures[k] for k in ("ratio", "statements", "worst")}}
    if figures["statements"]:
        store.audit(WATCHER.actor, "watch", rec.id, detail)  # every check that judged something: its figures
    slower = figures["ratio"] is not None and figures["ratio"] > limit
    share = _lock_share(connector) if slower else None
    if slower and not attributed(figures["ratio"], limit, share):
        detail["lock_waits"] = share
        why = (f"{ratio(figures['ratio'])} slower, but other sessions were waiting for locks in {share:.0%} of the "
               "samples: not held against the change")
        w["last"]["note"] = why
        store.audit(WATCHER.actor, "watch_deferred", rec.id, detail)
        if over:
            w["state"], w["ended_at"], w["note"] = "unjudged", now, f"the window ended under lock waits: {why}"
            store.audit(WATCHER.actor, "watch_unjudged", rec.id, detail)
        elif w["state"] == "failed":
            w["state"], w["note"] = "watching", ""
    elif slower:
        store.audit(WATCHER.actor, "watch_rollback", rec.id, detail)
        why = (f"automatic rollback: the {figures['statements']} watched statement(s) that ran since the apply took "
               f"{ratio(figures['ratio'])} their time before it (limit {ratio(limit)})")
        try:
            service.rollback(rec.id, WATCHER, why)
            w["state"], w["note"], w["ended_at"] = "rolled_back", why, now
        except AdvisorError as e:  # audited by the rollback as rollback_failed (or a claim held by another)
            if store.recommendation(rec.id).state != "applied":  # another process rolled it back meanwhile
                return _row(rec, w, f"rolled back by another process: {e}")
            w["state"], w["note"] = "failed", f"the regression was found but the rollback failed: {e}"
            store.audit(WATCHER.actor, "watch_failed", rec.id, {"error": str(e), "ratio": figures["ratio"]})
    elif over:
        w["state"] = "held" if figures["statements"] else "unjudged"
        w["ended_at"] = now
        w["note"] = ("no regression over the window" if figures["statements"] else
                     f"the window ended with no watched statement run {w['min_calls']} times to judge")
        store.audit(WATCHER.actor, f"watch_{w['state']}", rec.id, detail)
    elif w["state"] == "failed":  # a rollback that failed, and the regression is gone meanwhile
        w["state"], w["note"] = "watching", ""
    _save(store, rec.id, w)
    return _row(rec, w)


def _save(store, rec_id: str, w: dict) -> None:
    store.merge_applied(rec_id, {"watch": w})  # one store call: another process's change to applied is kept


def set_limit(store, rec: Recommendation, max_regression: float) -> None:
    """A schedule's own limit on the watch of what it applied (its ``max_regression``)."""
    w = (rec.applied or {}).get("watch")
    if isinstance(w, dict) and w["state"] in ACTIVE and w["max_regression"] != max_regression:
        _save(store, rec.id, {**w, "max_regression": float(max_regression)})


class Watcher:
    """The server's timer: ``check_watches`` every ``interval_s`` seconds on a daemon thread, until ``stop``."""

    def __init__(self, service, interval_s: float):
        self.service, self.interval_s = service, interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="advisor-watcher", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stopped.wait(self.interval_s):
            try:
                check_watches(self.service)
            except Exception as e:  # noqa: BLE001 - the timer goes on; the next tick tries again
                log.warning("checking the watches of applied recommendations failed: %s", e)

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
