"""How a tuning run's row says where it is, written here for every way a run is started (the command line's
``tune``, which opens its rows, and a queued run the executor does: ``execute_run``): running (and which process
owns it), then done with its outcome, failed with its message, cancelled, or interrupted (the process was stopped;
``--resume`` continues it). A kind's pipeline never writes a run's state: it returns its result."""

from __future__ import annotations

from collections.abc import Iterable


def running(store, run_id: str, owner: dict | None = None) -> None:
    """``run_id`` runs now (owned by ``owner``, the process that took it over, when given)."""
    store.update_run(run_id, state="running", **({"owner": owner} if owner is not None else {}))


def done(store, run_ids: Iterable[str], outcome: dict) -> None:
    """Each run ended with ``outcome`` (the kind's record of its result, ``Kind.outcome``), added to what its row
    recorded already."""
    for rid in run_ids:
        store.update_run(rid, state="done", result={**(store.run(rid)["result"] or {}), **outcome})


def failed(store, run_ids: Iterable[str], message: str, *, cancelled: bool = False) -> None:
    """Each run ended without a result: failed with ``message`` (or ``cancelled``, with why)."""
    for rid in run_ids:
        store.update_run(rid, state="cancelled" if cancelled else "failed", error=message)


def interrupted(store, run_ids: Iterable[str]) -> None:
    """Each run was stopped with its process (Ctrl-C, a signal): it can be resumed."""
    for rid in run_ids:
        store.update_run(rid, state="interrupted")
