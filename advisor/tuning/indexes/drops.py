"""Dropping existing indexes, validated like any other change: the unused and duplicate indexes the target's
snapshot shows (``optimizers.indexes.existing``) are dropped on the shadow and the workload is measured against
the shadow as it was, in interleaved rounds.

Dropping an index can only change the plans that use it (a plan that did not pick it stays the cheapest when it
is gone), so a drop is condemned when a statement whose plan on the shadow uses the index regresses by more
than the threshold; what is left is measured again. A regression in a statement whose plan uses none of the
dropped indexes is measurement noise: reported (``unexplained``), it condemns nothing; nor does the regression of a
statement too rare to matter (``Evidence.blocks``). Writes only get cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.core.domain import DropIndexChange, Evidence, IndexChange, Snapshot
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.core.sqltext import named
from advisor.tuning.indexes.built import plans_use
from advisor.tuning.recommend import how_much
from advisor.tuning.ledger import Ledger, workload_digest
from advisor.tuning.validation import ValidationOptions, validate
from connectors.base import Connector, Shadow
from optimizers.indexes.existing import find_drops
from workloads.statements.binding import BoundStatement

MAX_ROUNDS = 3


@dataclass(frozen=True)
class DropVerdict:
    drop: DropIndexChange
    size_bytes: int | None  # its size on the shadow (what dropping it frees)
    serves: tuple[str, ...]  # queryids whose plans on the shadow use it
    kept: bool
    reason: str


@dataclass(frozen=True)
class DropValidation:
    kept: tuple[DropIndexChange, ...] = ()
    verdicts: tuple[DropVerdict, ...] = ()
    evidence: Evidence | None = None  # of the kept drops
    unexplained: tuple[str, ...] = ()  # regressed statements that no kept drop can affect: noise

    @property
    def accepted(self) -> bool:
        """Drops were kept and no statement whose plan used one of them regressed without them."""
        noise = set(self.unexplained)
        return bool(self.kept) and not [r for r in (self.evidence.regressions if self.evidence else ())
                                        if r.queryid not in noise]

    def report(self) -> list[dict]:
        """One row per proposed drop, for the recommendation's details."""
        return [{"index": v.drop.name, "table": f"{v.drop.schema}.{v.drop.table}", "definition": v.drop.definition,
                 "why": v.drop.why, "size_bytes": v.size_bytes, "statements": list(v.serves), "kept": v.kept,
                 "reason": v.reason} for v in self.verdicts]


def validate_drops(target: Connector, shadow: Shadow, statements: Sequence[BoundStatement], snapshot: Snapshot,
                   options: ValidationOptions = ValidationOptions(), say: Say = silent,
                   ledger: Ledger | None = None) -> DropValidation:
    """The snapshot's unused and duplicate indexes, each dropped on the shadow and kept only if no statement
    using it regresses (see the module docstring); each pass's evidence a trial record of the run's ``ledger``
    (a resumed run reuses a stored pass over the same drops)."""
    ledger = ledger or Ledger(say=say)
    found = find_drops(snapshot.indexes, since=target.stats_since(), protected=target.constraint_indexes())
    proposed = [d for d in found if _plannable(shadow, d, say)]
    if not proposed or not statements:
        return DropValidation()
    sizes = shadow.connector.index_sizes([_named(d) for d in proposed])
    present = [d for d in proposed if sizes.get(_named(d))]
    used = plans_use(shadow, statements)
    verdicts = {d: DropVerdict(d, None, (), False, "not on the shadow") for d in proposed if d not in present}
    live, evidence = list(present), None
    workload = workload_digest(statements, options)
    for round_no in range(1, MAX_ROUNDS + 2):
        if not live:
            evidence = None
            break
        key = {"validation": "index drops", "pass": str(round_no), "workload": workload,
               "drops": "; ".join(sorted(f"{d.schema}.{d.name}" for d in live))}

        def measure(live=live, round_no=round_no):
            say(f"validating {len(live)} index drop(s) on the shadow (pass {round_no}): {options.rounds} rounds")
            return validate(shadow, statements, live, options, say=say)

        evidence = ledger.evidence(key, "validation", live, measure, f"drop pass {round_no}")
        if round_no > MAX_ROUNDS:
            break
        regressed = {s.queryid: s for s in evidence.regressions}
        condemned = {}
        for d in live:
            bad = [regressed[q] for q in sorted(used.get(d.name, ())) if q in regressed]
            if bad:
                worst = max(bad, key=lambda s: s.ratio if s.ratio == s.ratio else 9.9)
                condemned[d] = f"{named(worst.sql, worst.queryid)} regressed without it ({how_much(worst)})"
        if not condemned:
            break
        for d, why in condemned.items():
            verdicts[d] = DropVerdict(d, sizes.get(_named(d)), tuple(sorted(used.get(d.name, ()))), False, why)
        live = [d for d in live if d not in condemned]
        say(f"kept {len(condemned)} existing index(es): " + "; ".join(f"{d.name} ({w})" for d, w in condemned.items()))
    affected = {q for d in live for q in used.get(d.name, ())}
    unexplained = tuple(r.queryid for r in (evidence.regressions if evidence else ()) if r.queryid not in affected)
    for d in live:
        verdicts[d] = DropVerdict(d, sizes.get(_named(d)), tuple(sorted(used.get(d.name, ()))), True,
                                  "no statement regressed without it")
    return DropValidation(tuple(live), tuple(verdicts[d] for d in proposed), evidence, unexplained)


def _plannable(shadow: Shadow, drop: DropIndexChange, say: Say) -> bool:
    """Whether the connector can drop ``drop`` and put it back (its definition reads as a CREATE INDEX)."""
    try:
        shadow.connector.plan_changes([drop], {})
        return True
    except AdvisorError as e:
        say(f"existing index {drop.name} is not proposed for dropping: {e}")
        return False


def _named(drop: DropIndexChange) -> IndexChange:
    """An IndexChange naming the existing index, for the connector's size lookup by name."""
    return IndexChange(drop.schema, drop.table, ("?",), name=drop.name)
