"""Changing production: apply an approved, validated recommendation (which starts its watch,
``advisor.service.watch``); roll it back.

A rolled-back recommendation is applied again in one step while its evidence is fresh (``reapprove``: approved
again, audited, then applied as the first time: watched, and rolled back again by hand or by its watch); older
than ``reapply_max_age_days``, or rolled back by its watch (production measured it slower), it is refused with
one line saying to tune again for a fresh validation.

Apply first checks that the DSN reaches the very database the change was validated for (its identity, recorded
on the recommendation), then re-plans the recommendation's changes against the target as it is now. The SQL must
be the SQL that was approved (else the target changed and the recommendation is refused with ``Conflict``); the
revert SQL is taken now, so that it restores the values the target has at apply time. What was run, the revert,
who and when, the database's identity, the target's statement counters before the apply and the watch (with the
counters right after it) are recorded on the recommendation; the state change is audited (its note says what is
watched).

While an apply or rollback runs, the recommendation carries a claim in the store (``production_claim``) instead of
a store lock: the rest of the service goes on while production DDL waits for its locks (each statement gives up
after the lock timeout), and a second apply, approve or reject of the same recommendation, from this process or
another one sharing the store, is refused with ``Conflict``.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator, Sequence

from advisor.core import processes
from advisor.core.domain import Applied, IndexChange, Recommendation, state_word
from advisor.core.errors import AdvisorError, AlreadyExists, Conflict, InvalidTransition, OtherDatabase
from advisor.core.identity import describe, mismatch
from advisor.core.settings import get_settings
from advisor.service import watch
from advisor.service.auth import Principal
from advisor.tuning import kinds
from connectors.base import Connector


@contextlib.contextmanager
def production_claim(store, rec: Recommendation, state: str, who: Principal, op: str,
                     ttl_s: float) -> Iterator[str]:
    """Hold the recommendation's claim while production changes for it (released on the way out, whatever
    happens). A claim left by a process that is gone (on this host) or older than ``ttl_s`` is taken over."""
    mine = json.dumps({"id": uuid.uuid4().hex, "op": op, "by": who.actor, **processes.this_process()})
    if not store.claim(rec.id, state, mine):
        held, at = store.current_claim(rec.id)
        if held is None or not _abandoned(held, at, ttl_s) or not store.claim(rec.id, state, mine, replace=held):
            raise Conflict(_claimed_by(rec, held, at) if held else
                           f"recommendation {rec.id} is no longer {state}; reload it")
        store.audit(who.actor, "claim_taken_over", rec.id, {"from": json.loads(held)})
    try:
        yield mine
    finally:
        store.release(rec.id, mine)


def _abandoned(held: str, at: float | None, ttl_s: float) -> bool:
    try:
        claim = json.loads(held)
    except ValueError:
        return True
    if at is not None and time.time() - at > ttl_s:
        return True
    return processes.alive(claim) is False


def _claimed_by(rec: Recommendation, held: str, at: float | None) -> str:
    try:
        claim = json.loads(held)
    except ValueError:
        claim = {}
    since = time.strftime("%H:%M:%S", time.localtime(at)) if at else "?"
    return (f"recommendation {rec.id} is being changed in production right now ({claim.get('op', 'apply')} by "
            f"{claim.get('by', '?')} since {since}); wait for it to finish")


def _same_database(store, connector: Connector, rec: Recommendation, expected: dict | None, who: Principal,
                   action: str) -> dict:
    """The database's identity now, when it is the one ``expected`` (else audited and ``OtherDatabase``)."""
    actual = connector.identity()
    why = mismatch(expected, actual)
    if why:
        store.audit(who.actor, f"{action}_refused", rec.id, {"expected": expected, "reached": actual})
        raise OtherDatabase(f"recommendation {rec.id} was validated for {describe(expected)}, but the target's DSN "
                            f"now reaches {why}; nothing was changed")
    return actual


def apply_recommendation(store, connector: Connector, rec: Recommendation, who: Principal, *,
                         lock_timeout_s: float | None = None, claim_ttl_s: float = 6 * 3600.0) -> Recommendation:
    check_applicable(rec)
    again = rec.state == "rolled_back"
    if again:  # re-applied in one step: approved again (its evidence is fresh), audited
        rec = reapprove(store, rec, who)
    try:
        with production_claim(store, rec, "approved", who, "apply", claim_ttl_s) as claim:
            rec = store.recommendation(rec.id)  # as it is now that it is ours
            check_applicable(rec)
            return _apply(store, connector, rec, who, lock_timeout_s, claim)
    except AdvisorError as e:
        if again:  # the approval stands (audited): say so, never leave it unsaid
            e.message = f"{e.message}; it was approved again for this apply and stays approved"
            e.args = (e.message,)
        raise


def reapproval(rec: Recommendation, max_age_days: float, now: float | None = None) -> str:
    """The audit note of approving the rolled-back ``rec`` again, to re-apply it; ``InvalidTransition`` saying
    what to do instead when its evidence is old: validated over ``max_age_days`` ago, or contradicted by its
    watch, which rolled it back because production got slower.

    >>> rec = Recommendation("r1", "t", "indexes", "ia2", (), (), (), False, "rolled_back", created_at=0.0)
    >>> reapproval(rec, 7, now=2 * 86400.0)
    'approved again to re-apply it after its rollback (its evidence is 2.0 days old)'
    >>> reapproval(rec, 1, now=2 * 86400.0)
    Traceback (most recent call last):
    ...
    advisor.core.errors.InvalidTransition: recommendation r1 was rolled back and its evidence is 2.0 days old, older than 1 day(s) (ADVISOR_REAPPLY_MAX_AGE_DAYS): tune the target again for a fresh validation
    """
    age = ((time.time() if now is None else now) - rec.created_at) / 86400.0
    if ((rec.applied or {}).get("watch") or {}).get("state") == "rolled_back":
        raise InvalidTransition(f"recommendation {rec.id} was rolled back by its watch (its statements got slower in "
                                "production), so its evidence no longer stands: tune the target again for a fresh "
                                "validation")
    if age > max_age_days:
        raise InvalidTransition(f"recommendation {rec.id} was rolled back and its evidence is {age:.1f} days old, "
                                f"older than {max_age_days:g} day(s) (ADVISOR_REAPPLY_MAX_AGE_DAYS): tune the target "
                                "again for a fresh validation")
    return f"approved again to re-apply it after its rollback (its evidence is {age:.1f} days old)"


def reapprove(store, rec: Recommendation, who: Principal, note: str = "") -> Recommendation:
    """rolled_back -> approved, audited, when its evidence is fresh (``reapproval``)."""
    why = reapproval(rec, get_settings().reapply_max_age_days)
    return store.transition(rec.id, "approved", who.actor, f"{note}; {why}" if note else why, expect="rolled_back")


def handed_over(rec: Recommendation) -> bool:
    """Whether ``rec``'s kind hands its recommendations to people instead of applying them (the kind registry
    says; a kind this version no longer lists is not applied either)."""
    return rec.kind not in kinds.names() or kinds.get(rec.kind).handed_over


def check_applicable(rec: Recommendation) -> None:
    """Refuse what cannot be applied: a handed-over kind, a state other than approved (or rolled back, with fresh
    evidence: ``reapproval``), evidence that was not accepted."""
    if handed_over(rec):
        raise Conflict(f"recommendation {rec.id} is a {rec.kind} recommendation: it is handed to its owners "
                       "(the statements' or the index's) and never applied to the database; its lifecycle ends at "
                       "approved")
    if rec.state == "rolled_back":
        reapproval(rec, get_settings().reapply_max_age_days)  # InvalidTransition when its evidence is old
    elif rec.state != "approved":
        raise InvalidTransition(f"recommendation {rec.id} is {state_word(rec.state)}; only an approved recommendation "
                                "can be applied" + (" (approve it first)" if rec.state == "validated" else ""))
    # the validation's own verdict: a significant gain, and no regression but those it recorded as noise (slower
    # statements whose plans use none of the kept indexes and that write none of their tables)
    noise = set((rec.details or {}).get("unexplained_slowdowns") or ())
    ev = rec.evidence
    if ev is None or not ev.significant or [r for r in ev.regressions if r.queryid not in noise]:
        raise Conflict(f"recommendation {rec.id} has no accepted validation evidence; it cannot be applied")


def _apply(store, connector: Connector, rec: Recommendation, who: Principal, lock_timeout_s: float | None,
           claim: str) -> Recommendation:
    expected = (rec.details or {}).get("target_identity") or store.target_identity(rec.target_id)
    identity = _same_database(store, connector, rec, expected, who, "apply")
    plan = connector.plan_changes(rec.changes)
    if tuple(plan.apply_sql) != tuple(rec.apply_sql):
        raise Conflict(f"the target changed since recommendation {rec.id} was made: applying it now would run "
                       f"{list(plan.apply_sql)}, not the approved {list(rec.apply_sql)}; tune again")
    _check_ownable(store, connector, rec, who)
    before = watch.counters(connector)
    try:
        done = connector.apply(rec.changes, lock_timeout_s=lock_timeout_s)
    except AdvisorError as e:
        store.audit(who.actor, "apply_failed", rec.id, {"error": str(e)})
        raise
    applied = {"at": time.time(), "by": who.actor, "apply_sql": list(done.apply_sql),
               "revert_sql": list(done.revert_sql), "needs_restart": done.needs_restart,
               "restarted": done.restarted, "statements_before": before, "identity": identity,
               "owned": _owned(connector, rec)}
    try:  # the watch's window starts now that the change is in place (an index build may have taken minutes)
        start = watch.counters(connector)
    except AdvisorError:
        start = before
    applied["watch"] = watch.begin(rec, applied, start, get_settings())
    store.set_applied(rec.id, applied)
    note = "applied" + ("; the server must be restarted for it to take full effect"
                        if done.needs_restart and not done.restarted else "") + "; " + watch.started(applied["watch"])
    return store.transition(rec.id, "applied", who.actor, note, expect="approved", claim=claim)


def rollback_recommendation(store, connector: Connector, rec: Recommendation, who: Principal, why: str = "", *,
                            lock_timeout_s: float | None = None, claim_ttl_s: float = 6 * 3600.0) -> Recommendation:
    _check_applied(rec)
    with production_claim(store, rec, "applied", who, "rollback", claim_ttl_s) as claim:
        rec = store.recommendation(rec.id)
        _check_applied(rec)
        return _rollback(store, connector, rec, who, why, lock_timeout_s, claim)


def _check_applied(rec: Recommendation) -> None:
    if rec.state != "applied" or not rec.applied:
        raise InvalidTransition(f"recommendation {rec.id} is {state_word(rec.state)}; only an applied recommendation "
                                "can be rolled back")


def _rollback(store, connector: Connector, rec: Recommendation, who: Principal, why: str,
              lock_timeout_s: float | None, claim: str) -> Recommendation:
    a = rec.applied
    expected = a.get("identity") or (rec.details or {}).get("target_identity") or store.target_identity(rec.target_id)
    _same_database(store, connector, rec, expected, who, "rollback")
    done = Applied(rec.changes, tuple(a["apply_sql"]), tuple(a["revert_sql"]), a["needs_restart"])
    keep, left = _still_ours(connector, rec, a.get("owned"))
    if left:
        store.audit(who.actor, "rollback_left_alone", rec.id, {"objects": left})
    try:
        if any(keep):
            connector.revert(only(done, keep), lock_timeout_s=lock_timeout_s)
    except AdvisorError as e:
        store.audit(who.actor, "rollback_failed", rec.id, {"error": str(e)})
        raise
    note = why or "rolled back"
    if left:
        note += (f"; left alone, no longer what this change made (dropped, rebuilt or made by someone else since): "
                 f"{', '.join(left)}")
    if a["needs_restart"]:
        note += "; the server must be restarted for it to take full effect"
    return store.transition(rec.id, "rolled_back", who.actor, note, expect="applied", claim=claim)


# --- what a change owns (issue 42) --------------------------------------------------------------------------------


def _owned(connector: Connector, rec: Recommendation) -> list[list] | None:
    """What the apply made, as the server identifies it now (``Connector.ownership``): checked before a revert.
    None when it could not be read (a revert then runs as recorded)."""
    try:
        return [[key, ident] for key, ident in connector.ownership(rec.changes)]
    except AdvisorError:
        return None


def _check_ownable(store, connector: Connector, rec: Recommendation, who: Principal) -> None:
    """Refuse an apply whose changes collide with an applied recommendation of the target (one index name, one
    index definition on one table under another name, one setting: the second is refused, naming the first), or
    that would create an index that exists already (made by someone else: never ours to build over, nor to drop)."""
    mine = connector.ownership(rec.changes)
    keys = {key for key, _ in mine} | _definitions(rec.changes)
    for other in store.recommendations("applied", rec.target_id):
        if other.id == rec.id:
            continue
        owned = (other.applied or {}).get("owned")
        theirs = ({key for key, _ in owned} if owned else {key for key, _ in connector.ownership(other.changes)}) \
            | _definitions(other.changes)
        clash = sorted(keys & theirs)
        if clash:
            store.audit(who.actor, "apply_refused", rec.id, {"collides_with": other.id, "objects": clash})
            raise Conflict(f"recommendation {rec.id} collides with recommendation {other.id}, applied already "
                           f"({', '.join(clash)}); nothing was changed: roll {other.id} back first to apply this one")
    taken = [key for (key, ident), change in zip(mine, rec.changes) if isinstance(change, IndexChange)
             and ident is not None]
    if taken:
        store.audit(who.actor, "apply_refused", rec.id, {"exists": taken})
        raise AlreadyExists(f"recommendation {rec.id} would build {', '.join(taken)}, which exists already and was "
                            "not made by an applied recommendation; nothing was changed and nothing was dropped")


def _definitions(changes) -> set[str]:
    """The definitions of the indexes ``changes`` build, whatever their names: two builds of one definition on one
    table collide as two of one name do.

    >>> sorted(_definitions([IndexChange("public", "orders", ("customer_id",), name="mine")]))
    ['index on public.orders(customer_id) using btree']
    """
    return {f"index on {c.schema}.{c.label()} using {c.method}" for c in changes if isinstance(c, IndexChange)}


def only(applied: Applied, keep: Sequence[bool]) -> Applied:
    """The part of ``applied`` made of the changes ``keep`` marks (one flag per change). ``apply_sql`` and
    ``revert_sql`` hold one statement per change (``revert_sql`` in reverse order), then what follows them all
    (a reload), which stays.

    >>> a = Applied(("a", "b"), ("do a", "do b", "reload"), ("undo b", "undo a", "reload"), False)
    >>> only(a, [False, True]).revert_sql
    ('undo b', 'reload')
    """
    n = len(applied.changes)
    forward, back = applied.apply_sql[:n], tuple(reversed(applied.revert_sql[:n]))
    picked = [i for i in range(n) if keep[i]]
    return Applied(tuple(applied.changes[i] for i in picked),
                   tuple(forward[i] for i in picked) + applied.apply_sql[n:],
                   tuple(back[i] for i in reversed(picked)) + applied.revert_sql[n:], applied.needs_restart,
                   applied.restarted)


def _still_ours(connector: Connector, rec: Recommendation, owned: list | None) -> tuple[list[bool], list[str]]:
    """Which of the recommendation's changes a revert may undo: those whose object is still the one the apply
    left (compared with ``owned``, recorded at apply); with no record (an apply of an older version), all."""
    if not owned or len(owned) != len(rec.changes):
        return [True] * len(rec.changes), []
    now = connector.ownership(rec.changes)
    keep, left = [], []
    for (key, ident), (now_key, now_ident) in zip(owned, now):
        ours = key == now_key and (ident == "" or ident == now_ident)
        keep.append(ours)
        if not ours:
            left.append(key)
    return keep, left
