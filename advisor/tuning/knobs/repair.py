"""What a knob validation tries when the minimal configuration cannot be had as measured: the ablation's fallback
(no knob's share settled) and the repair after a regression.

**Fallback.** Beside a busy CPU, three rounds of the whole workload rarely settle a single knob's share, although
the full configuration's gain does (the demo beside two ``yes`` processes: +23.8%, 95% CI +14.8% .. +32.8%, then
every one of its 4 knobs "within noise", so "0 of 4 knobs kept" and the candidate abandoned). A share that did not
settle does not prove the knob useless: ``fall_back`` keeps those knobs together, shares unknown, and validation
decides.

**Repair.** A reduced configuration rejected *only* because statements regressed (its gain clears the minimum) is
validated again without the knob to blame, the set minus one knob, the knob carrying the least of the gain first
(its share; where shares are unknown, its measured leave-one-out loss), at most ``MAX_REPAIRS`` validations in a
run. Why: on that same demo the ablation kept random_page_cost (39%) and join_collapse_limit (61%), and
random_page_cost made two statements slower (1.27x, 1.98x); join_collapse_limit, which carries most of the gain
in every run, was thrown away with it. The regression itself is measured again, never assumed: the repaired set is
validated like any other (mirrors ``advisor.tuning.indexes.repair`` for indexes).
When the ablation kept a single knob and that knob is what regressed, nothing is left to take out of the kept set;
the repair then validates the candidate's other changes without it (``widened``: the knobs the ablation had left
out on whole-workload comparisons, less those that change no plan). On the quiet demo the ablation kept
random_page_cost alone of a configuration that gained +26% in all, random_page_cost gained +13.8% and slowed two
statements, and the candidate was abandoned; beside two CPU hogs the same trial's other knobs (JIT's threshold
among them) were validated at +22%.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from advisor.core.domain import Evidence
from advisor.tuning.knobs.shares import PLAN_INERT, Ablation, DroppedKnob, KnobShare
from advisor.tuning.recommend import slower

MAX_REPAIRS = 2  # validations of repaired configurations in one run, beside the candidates' (MAX_VALIDATIONS)


def untold_knobs(kept: Sequence[str], untold: Mapping[str, float]) -> list[str]:
    """The fallback's knobs: those of ``kept`` (what the ablation's path left) whose share did not settle,
    largest measured loss first; [] when every drop settled (a significant loss too small to pay, or a restart it
    does not pay for: measured, so the current settings are kept).

    >>> untold_knobs(["a", "b", "c"], {"a": -0.012, "c": 0.04})
    ['c', 'a']
    >>> untold_knobs(["a", "b"], {})
    []
    """
    return sorted((n for n in kept if n in untold), key=lambda n: -untold[n])


def fall_back(out: Ablation, kept: Sequence[str], catalog: Mapping, rounds: int, gain: float,
              say: Callable[[str], None]) -> None:
    """No knob of ``kept`` was kept, but the full configuration cleared the minimum (``gain``): the knobs whose
    share did not settle in ``rounds`` rounds go on together, shares unknown (``Ablation.fallback``), out of
    ``out.dropped``. Nothing changes when every drop settled."""
    names = untold_knobs(kept, out.untold)
    if not names:
        return
    rows = {d.knob: d for d in out.dropped if d.knob in names}
    out.dropped = [d for d in out.dropped if d.knob not in names]
    out.shares = [KnobShare(n, rows[n].current, rows[n].proposed, share=float("nan"), saves=float("nan"),
                            restart=catalog[n].needs_restart, loss=out.untold[n], measured=rows[n].measured)
                  for n in names]
    out.fallback = True
    out.why = (f"the full configuration gains {gain:+.1%}, but no knob's share settled within {rounds} rounds: "
               f"the ablation could not tell which carry the gain, so its {len(names)} knob(s) "
               f"({', '.join(names)}) are validated together")
    say(f"ablation: {out.why}")


def repairable(evidence: Evidence) -> bool:
    """Rejected only because statements regressed: the gain's interval clears the minimum.

    >>> from advisor.core.domain import StatementEvidence as S
    >>> bad = S("q13", "select c_count", 1, 10.0, 12.7, 1.27, (1.2, 1.3), True, 0, 0.3, 0.3)
    >>> ev = lambda lo, sts: Evidence(3, (), (), lo + 0.02, (lo, lo + 0.05), sts, 0.02, 0.1)
    >>> repairable(ev(0.14, (bad,))), repairable(ev(0.0, (bad,))), repairable(ev(0.14, ()))
    (True, False, False)
    """
    return evidence.significant and bool(evidence.regressions)


def to_take_out(shares: Sequence[KnobShare], limit: int = MAX_REPAIRS) -> list[str]:
    """The knobs to take out of a kept set that regressed, one per repair, in order: the one carrying the least
    of the gain first (its share; where shares are unknown, its measured leave-one-out loss; unknown both: last),
    at most ``limit``; [] for a single knob (without it nothing is left to validate).

    >>> K = lambda knob, share, loss=float("nan"): KnobShare(knob, "", "", share, share, False, loss)
    >>> to_take_out([K("random_page_cost", 0.39), K("join_collapse_limit", 0.61)])
    ['random_page_cost', 'join_collapse_limit']
    >>> nan = float("nan")
    >>> to_take_out([K("a", nan, 0.04), K("b", nan, -0.01), K("c", nan), K("d", nan, 0.2)])
    ['b', 'a']
    >>> to_take_out([K("a", 1.0)])
    []
    """
    if len(shares) < 2:
        return []

    def key(s: KnobShare) -> tuple[int, float]:
        for x in (s.share, s.loss):
            if x == x:
                return 0, x
        return 1, 0.0

    return [s.knob for s in sorted(shares, key=key)][:limit]


def widened(unreduced: Mapping[str, str], cut: Ablation, current: Mapping[str, str], knob: str) -> dict[str, str] | None:
    """The candidate's configuration before the ablation (``unreduced``) without ``knob`` (its one kept knob, which
    regressed) and without the knobs the ablation found change no plan: each back at its ``current`` value; None
    when that changes nothing.

    >>> from advisor.tuning.knobs.shares import Ablation, DroppedKnob
    >>> cut = Ablation({}, dropped=[DroppedKnob("cpu_tuple_cost", "0.01", "0.02", PLAN_INERT),
    ...                             DroppedKnob("work_mem", "4MB", "60MB", "within noise")])
    >>> now = {"random_page_cost": "4", "work_mem": "4MB", "cpu_tuple_cost": "0.01"}
    >>> widened({"random_page_cost": "1.1", "work_mem": "60MB", "cpu_tuple_cost": "0.02"}, cut, now, "random_page_cost")
    {'random_page_cost': '4', 'work_mem': '60MB', 'cpu_tuple_cost': '0.01'}
    >>> widened({"random_page_cost": "1.1", "work_mem": "4MB", "cpu_tuple_cost": "0.01"}, cut, now, "random_page_cost")
    """
    inert = {d.knob for d in cut.dropped if d.why == PLAN_INERT}
    out = {n: (current[n] if n == knob or n in inert else v) for n, v in unreduced.items()}
    return out if any(out[n] != current.get(n) for n in out) else None


def blame(evidence: Evidence) -> str:
    """What the regressions were, for the row of the knob taken out: ``with it select c_count ...: 1.27x, 2.9% of
    the time``."""
    worst = sorted(evidence.regressions, key=lambda s: -(s.ratio if s.ratio == s.ratio else 9.9))
    return "with it " + "; ".join(slower(s) for s in worst[:2]) + (" ..." if len(worst) > 2 else "")


def without(cut: Ablation, knob: str, current: str, why: str) -> Ablation:
    """A copy of ``cut`` with ``knob`` taken out: back at ``current`` (the current settings' value) in its
    configuration, out of its shares, into its dropped knobs with ``why``; the shares left are put over their
    losses again."""
    row = next(s for s in cut.shares if s.knob == knob)
    out = Ablation({**cut.config, knob: current}, [s for s in cut.shares if s.knob != knob],
                   [*cut.dropped, DroppedKnob(knob, row.current, row.proposed, why, row.measured)], cut.reference,
                   passes=cut.passes, changed=cut.changed, untold=dict(cut.untold), fallback=cut.fallback)
    out.rescale(0.0)
    return out
