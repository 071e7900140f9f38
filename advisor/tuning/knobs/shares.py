"""What an ablation of a knob configuration finds (``advisor.tuning.knobs.ablation`` measures it): its options,
each kept knob with its share of the gain, each dropped knob with why, and the rule that says whether a knob pays
(``verdict``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from advisor.core.wording import with_it

if TYPE_CHECKING:
    from advisor.tuning.knobs.trials import ObjectiveComparison


# why the ablation drops a planner-only knob before any timing (``ablation._plan_inert``)
PLAN_INERT = "it changes no statement's plan (only the planner reads it), so it cannot change the workload's time"


@dataclass(frozen=True)
class AblationOptions:
    rounds: int = 3  # ABBA rounds of each comparison
    reference_rounds: int = 8  # the round budget of the first one (the full configuration against the current
    # settings), which decides whether the candidate goes on at all: a clear case stops at 3; three rounds of the
    # whole workload left a +10.0% gain at -0.1% .. +13.3% on a quiet machine ("keep your current settings")
    max_knobs: int = 5  # the path goes on dropping while more knobs than this are changed
    max_loss: float = 0.10  # the reduced set may lose at most this share of the full configuration's gain
    min_share: float = 0.05  # a knob stays only when it carries at least this share of the gain
    restart_min_gain: float = 0.05  # a knob that needs a restart must save this share of the workload's time
    max_steps: int = 4  # comparisons on the path (step 3)
    confirm_below: float = 0.25  # a knob whose share is below this is measured twice (both must show the loss)
    min_gain: float = 0.02  # the full configuration must clear this gain (lower end of its interval)


@dataclass(frozen=True)
class KnobShare:
    """A knob kept: current -> proposed; ``share``: its part of the kept set's gain (its leave-one-out loss over
    the kept knobs' losses together: the shares sum to 1); ``saves``: the part of the workload's time it saves
    (its share of the gain, as validated); whether applying it needs a restart; ``loss``: how much slower the
    kept set was without it (a fraction of its time; NaN when not measured)."""

    knob: str
    current: str
    proposed: str
    share: float
    saves: float
    restart: bool
    loss: float = float("nan")
    measured: str = ""  # how its leave-one-out comparison went (``ObjectiveComparison.line``); "" if not measured

    def to_dict(self) -> dict:
        """As stored in a recommendation's details (an unknown share is None: JSON has no NaN)."""
        return {"knob": self.knob, "current": self.current, "proposed": self.proposed, "share": _known(self.share),
                "saves": _known(self.saves), "restart": self.restart, "measured": self.measured}


@dataclass(frozen=True)
class DroppedKnob:
    knob: str
    current: str
    proposed: str
    why: str
    measured: str = ""  # how the comparison that dropped it went; "" if none did


@dataclass
class Ablation:
    """The outcome: ``config`` is the reduced configuration (every searched knob, the dropped ones at their
    current value); ``keep_current``: no change pays (then ``why`` says what was measured)."""

    config: dict[str, str]
    shares: list[KnobShare] = field(default_factory=list)
    dropped: list[DroppedKnob] = field(default_factory=list)
    reference: ObjectiveComparison | None = None
    keep_current: bool = False
    why: str = ""
    passes: int = 0
    changed: int = 0  # knobs the full configuration changed
    # knob -> its leave-one-out loss, for each knob dropped in step 4 because that loss did not settle (not
    # significant): not proven useless
    untold: dict[str, float] = field(default_factory=dict)
    fallback: bool = False  # no share settled: the untold knobs are kept together, their shares unknown (step 5)

    @property
    def kept(self) -> list[str]:
        return [s.knob for s in self.shares]

    def rescale(self, gain: float) -> None:
        """Each kept knob's share of ``gain`` (the reduced set's gain as validated, or as the path measured it):
        shares from the leave-one-out losses, summing to 1; what each saves of the workload's time."""
        total = sum(max(s.loss, 0.0) for s in self.shares if s.loss == s.loss)
        out = []
        for s in self.shares:
            known = total > 0 and s.loss == s.loss and not self.fallback
            share = max(s.loss, 0.0) / total if known else float("nan")
            out.append(replace(s, share=share, saves=share * max(gain, 0.0)))
        self.shares = out

    def details(self) -> dict:
        """What a recommendation's details record of the ablation."""
        ref = self.reference
        return {"knob_shares": [s.to_dict() for s in self.shares],
                "ablation": {"changed": self.changed, "kept": len(self.shares), "passes": self.passes,
                             "fallback": self.fallback,
                             "full_gain": ref.gain if ref else None, "full_gain_ci": list(ref.ci) if ref else None,
                             "measured": ref.line if ref else None,
                             "dropped": [{"knob": d.knob, "current": d.current, "proposed": d.proposed, "why": d.why,
                                          "measured": d.measured} for d in self.dropped]}}


def verdict(loss: float, significant: bool, gain: float, restart: bool,
            options: AblationOptions = AblationOptions()) -> tuple[float, float, str | None]:
    """Whether a knob pays, from its leave-one-out comparison: ``loss``, how much slower the kept set got without
    it (a fraction of the kept set's time), whether that loss is significant, and ``gain``, the kept set's gain
    over the current settings (a fraction of their time). Returns (share of the gain, share of the workload's time
    it saves, None when it pays or why it does not).

    >>> verdict(1.0, True, 0.5, False)  # without it the kept set takes twice as long: all of the gain is its
    (1.0, 0.5, None)
    >>> verdict(0.01, False, 0.5, False)[2]
    'within noise: with it the workload was 1.0% faster (not significant)'
    >>> verdict(-0.201, True, 0.5, False)[2]  # without it 20.1% less time: with it 25.2% more
    'does not pay: with it the workload was 25.2% slower'
    >>> verdict(0.08, True, 0.5, True)[2]  # 8% of the gain, but 4% of the time: not worth a restart
    'pays less than its restart: saves 4.0% of the workload time, a restart needs 5%'
    """
    share = loss * (1.0 - gain) / gain if gain > 0 else 0.0
    saves = loss * (1.0 - gain)
    if loss <= 0:
        return share, saves, f"does not pay: {with_it(loss)}"
    if not significant:
        return share, saves, f"within noise: {with_it(loss)} (not significant)"
    if share < options.min_share:
        return share, saves, f"pays too little: {share:.0%} of the gain (needs {options.min_share:.0%})"
    if restart and saves < options.restart_min_gain:
        return share, saves, (f"pays less than its restart: saves {saves:.1%} of the workload time, a restart "
                              f"needs {options.restart_min_gain:.0%}")
    return share, saves, None


def _known(x: float) -> float | None:
    return x if x == x else None


def seed_line(name: str, change: float) -> str:
    """How a seed's one pass compares with the current configuration's, ``change`` being its objective over
    theirs - 1 (lower is better), the sign folded into a word.

    >>> seed_line("workload-rules", -0.29), seed_line("rules", -0.004)
    ('workload-rules configuration is better than the current one (its objective 29% lower, one pass)', 'rules configuration is about the same as the current one (its objective the same, one pass)')
    """
    verdict = "worse than" if change > 0.05 else "better than" if change < -0.05 else "about the same as"
    moved = f"{abs(change):.0%} {'higher' if change > 0 else 'lower'}" if round(abs(change), 2) else "the same"
    return f"{name} configuration is {verdict} the current one (its objective {moved}, one pass)"
