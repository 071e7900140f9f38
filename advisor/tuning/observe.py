"""The first step of every pipeline: observe the target (statement statistics, settings, schema and statistics)
and store the snapshot under the target of that database (found by its identity, whatever DSN reached it; the
history of targets once observed by hand for it joins the registered one), or, for a database that is not
registered and not observed by hand, return it unstored; then bind the heaviest statements to constants so they
can be replayed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.core.domain import Snapshot, Statement, Workload
from advisor.core.errors import AdvisorError, NothingToReplay, OtherDatabase
from advisor.core.identity import describe, mismatch
from advisor.core.progress import Say, silent
from advisor.storage.store import Store
from connectors.base import Connector
from workloads.statements.capture import workload_delta
from workloads.statements.shape import classify

if TYPE_CHECKING:  # binding reads statements with sqlglot: imported when a run binds, not for every command
    from workloads.statements.binding import BoundStatement


@dataclass(frozen=True)
class Observation:
    target_id: str | None  # None: a database observed but not stored (``observe``'s ``by_hand``)
    snapshot_id: str | None
    snapshot: Snapshot
    workload: Workload
    workload_kind: str  # web | oltp | dw | desktop | mixed (``workloads.statements.shape.classify``, engine-neutral)

    @property
    def data_bytes(self) -> int:
        """Tables with their indexes and TOAST, bytes."""
        return sum(t.total_bytes for t in self.snapshot.tables)


def observe(store: Store, connector: Connector, name: str | None = None, interval_s: float = 0.0,
            say: Say = silent, *, by_hand: bool = True) -> Observation:
    """Snapshot the target and store it under the target ``name``, or (no name: a DSN given by hand) under the
    target recorded for the same database (its identity, whatever the DSN's text), or, when there is none and
    ``by_hand``, under a new unregistered target named after the DSN. Without ``by_hand`` a DSN counts only as a
    registered target's: another database is observed but not stored (``target_id`` and ``snapshot_id`` None).
    The workload is the delta over
    ``interval_s`` seconds, or everything since the last statistics reset when 0."""
    say(f"observing {connector.display_name}")
    before = connector.observe() if interval_s > 0 else None
    if before is not None:
        say(f"waiting {interval_s:g}s for the workload")
        time.sleep(interval_s)
    snap = connector.observe()
    workload = workload_delta(snap, before)
    identity = connector.identity()
    found = store.target_with_identity(identity, registered_only=not by_hand) if name is None else None
    name = found["name"] if found else name
    if name is None and not by_hand:
        why = f"{connector.target_name} ({describe(identity)}) is not a registered target; register it to keep its " \
            "history (--register NAME)"
        say(f"observed, not stored: {why}")
        return Observation(None, None, snap, workload, classify(workload))
    target_id = store.upsert_target(name or connector.target_name, connector.engine, connector.display_name)
    _check_identity(store, target_id, identity, say)
    snapshot_id = store.add_snapshot(target_id, snap, workload)
    return Observation(target_id, snapshot_id, snap, workload, classify(workload))


def _check_identity(store: Store, target_id: str, identity: dict, say: Say) -> None:
    """Record the database a target is on first sight; afterwards a registered target must stay on it (its DSN
    changes only by an explicit update), while a DSN given by hand may move its name to another database, which
    is audited (recommendations keep the identity they were made for, so theirs cannot follow)."""
    recorded = store.target_identity(target_id)
    why = mismatch(recorded, identity)
    target = store.target_by_id(target_id)
    if target["registered"] and not why:
        joined = store.adopt_targets(target_id, identity)
        if joined:
            say(f"target {target['name']} now holds the history of {', '.join(joined)}: observed by hand, the same "
                "database")
    if recorded is not None and why is None:
        return
    if why and target["registered"]:
        raise OtherDatabase(f"target {target['name']} was registered for {describe(recorded)}, but its DSN now "
                            f"reaches {why}; if that is intended, update the target's DSN explicitly "
                            "(`advisor targets update --other-database`)")
    if why:
        say(f"target {target['name']} now names {describe(identity)} (was {describe(recorded)})")
        store.audit("advisor", "target_identity_changed", target_id, {"from": recorded, "to": identity})
    store.set_target_identity(target_id, identity)


def require_workload(obs: Observation) -> Observation:
    """``obs``, when it has at least one application statement (tuning needs a workload)."""
    if not obs.workload.statements:
        raise AdvisorError(f"no workload observed in database {obs.snapshot.database!r}: the statement statistics have "
                           "no application statements; run the workload first")
    return obs


def top(statements: Sequence[Statement], n: int) -> tuple[Statement, ...]:
    """The ``n`` statements with the most total time."""
    return tuple(sorted(statements, key=lambda s: s.total_ms, reverse=True)[:n])


def bind(connector: Connector, obs: Observation, max_statements: int,
         say: Say = silent) -> tuple[list[BoundStatement], tuple[tuple[str, str], ...]]:
    """The heaviest ``max_statements`` statements bound to constants, and (sql, why) for those that cannot be."""
    from workloads.statements.binding import bind_workload

    bound, skipped = bind_workload(connector, Workload(top(obs.workload.statements, max_statements)))
    for _st, why in skipped:
        say(f"cannot replay a statement ({why}); left out")
    if not bound:
        raise NothingToReplay("nothing to replay: no statement of the workload could be bound to values")
    return bound, tuple((s.sql, w) for s, w in skipped)
