"""Minimal knob changes: the best configuration of a search reduced, by ablation on the shadow, to the few knobs
that carry its gain, each with its measured share.

Every measurement is an interleaved A/B comparison of two configurations (``trials.compare_configs``: the
measurement engine's ABBA rounds of the search's own objective, into Evidence with its interval and its measured
line, kept with each verdict), or, for the screening, one pass. The path from the best configuration F back
towards the current one B:

0. **Plans** (before the reference): a changed knob only the planner reads (``KnobSpec.plans_only``) that leaves
   every statement's plan the same beside the others is dropped without a timing (``_plan_inert``): it cannot move
   the workload's time. When every change is such a knob, the advice is to keep the current settings.
1. **Reference**: F against B. When the interval's lower end does not clear the minimum gain, there is nothing to
   reduce: the advice is to keep the current settings.
2. **Screening** (only when F changes more than ``max_knobs`` knobs): one pass of F without each knob (that knob
   back at its current value), beside passes of F; a knob's loss is how much slower F got without it.
3. **Path**: drop the knobs whose removal costs least (those within noise, i.e. the larger of ``max_loss`` of the
   gain and the spread of F's own passes, then the cheapest until at most ``max_knobs`` are left), re-measured
   against F: a drop stands when it costs at most ``max_loss`` of F's gain, or when its loss is not significant
   and under half the gain; otherwise fewer knobs are dropped. At most ``max_steps`` comparisons; when they end
   with more than ``max_knobs`` knobs left, only the ``max_knobs`` that screened most valuable go on.
4. **Shares**: each knob still changed is removed in turn from the kept set S (cheapest first) and measured
   against S. It stays only when moving it pays: its removal is a significant loss that costs at least
   ``min_share`` of the gain, and for a knob that needs a restart, at least ``restart_min_gain`` of the workload's
   time; a knob whose share is under ``confirm_below`` is measured twice, and both must show the loss. A single
   knob left by the path is not measured alone (without it is the current settings: the path measured that, and
   validation measures it again). Reported shares are the kept knobs' leave-one-out losses, normalised to sum
   to 1; what each saves is its share of the validated gain.
5. **Fallback** (``advisor.tuning.knobs.repair.fall_back``): when the reference cleared the minimum but no knob's share settled (every leave-one-out loss was
   within noise, as three rounds of the whole workload beside a busy CPU often are), the ablation could not tell
   which knobs carry the gain, which does not prove them useless: the knobs whose share did not settle are kept
   together (``fallback``, shares unknown) and validation decides, rather than the candidate being abandoned.

Budget: at most 2 x rounds passes per comparison (fewer when its interval settles from 3 rounds on); k + k/4
single passes to screen k knobs; at most 1 + ``max_steps`` + 2 x ``max_knobs`` comparisons in all (24 changed
knobs, 3 rounds: 30 passes to screen, at most 90 to compare). Values are compared as given: round them first
(``KnobSpace.rounded``), so what is measured is what is recommended.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.core.wording import slower_faster, with_it
from advisor.tuning.knobs.repair import fall_back
from advisor.tuning.knobs.shares import PLAN_INERT, Ablation, AblationOptions, DroppedKnob, KnobShare, verdict
from advisor.tuning.knobs.trials import ObjectiveComparison, TrialRunner, compare_configs

__all__ = ["PLAN_INERT", "Ablation", "AblationOptions", "DroppedKnob", "KnobShare", "ablate", "verdict"]

SCREEN_REFERENCE_EVERY = 4  # a pass of F after every this many screening passes (the server's drift)


@dataclass
class _Path:
    trials: TrialRunner
    baseline: dict[str, str]
    options: AblationOptions
    say: Say
    passes: int = 0

    def config(self, full: Mapping[str, str], without: set[str]) -> dict[str, str]:
        return {n: (self.baseline[n] if n in without else v) for n, v in full.items()}

    def compare(self, a: Mapping[str, str], b: Mapping[str, str],
                rounds: int | None = None) -> ObjectiveComparison | None:
        """A against B, interleaved, at most ``rounds`` (the options' by default); None when B cannot be run (it
        breaks a constraint, fails or times out)."""
        if self.trials.space.violations(b):
            return None
        rounds = rounds or self.options.rounds
        try:
            cmp = compare_configs(self.trials, a, b, rounds=rounds, say=self.say, min_gain=self.options.min_gain)
        except AdvisorError as e:
            self.passes += 2 * rounds  # at most
            self.say(f"ablation: a configuration failed ({e}); its knobs stay")
            return None
        self.passes += 2 * (len(cmp.baseline) + (cmp.measured.noise_rounds if cmp.measured else 0))
        return cmp

    def one_pass(self, config: Mapping[str, str]) -> float | None:
        if self.trials.space.violations(config):
            return None
        self.passes += 1
        result, _, _ = self.trials.trial(config)
        return result.objective


def ablate(trials: TrialRunner, baseline: Mapping[str, str], full: Mapping[str, str],
           options: AblationOptions = AblationOptions(), say: Say = silent) -> Ablation:
    """Reduce ``full`` (a configuration of the searched knobs) to the knobs that carry its gain over ``baseline``
    (the current settings), measured on ``trials``' shadow (see the module docstring). The shadow is left at
    whatever configuration ran last: reset it before validating."""
    space = trials.space
    catalog = space.catalog
    full = dict(full)
    changed = [n for n in full if not space.units.same_value(catalog[n], baseline[n], full[n])]
    path = _Path(trials, dict(baseline), options, say)
    out = Ablation(dict(baseline), changed=len(changed))
    if not changed:
        out.keep_current, out.why = True, "the best configuration changes nothing"
        return out
    inert = _plan_inert(path, full, changed)
    if inert:  # known without a timing: they change no plan, so no statement's time
        out.dropped += [DroppedKnob(n, _shown(path, n, baseline[n]), _shown(path, n, full[n]), PLAN_INERT)
                        for n in inert]
        full, changed = path.config(full, set(inert)), [n for n in changed if n not in inert]
        say(f"ablation: {len(inert)} planner-only knob(s) change no statement's plan beside the others; dropped "
            f"without a timing: {', '.join(inert)}")
        if not changed:
            out.keep_current, out.why = True, f"its changes are planner settings, and {PLAN_INERT}"
            return out
    reference_rounds = max(options.rounds, options.reference_rounds)
    say(f"ablation: the best configuration changes {len(changed)} knob(s); measuring it against the current "
        f"settings (at most {reference_rounds} interleaved rounds)")
    ref = path.compare(baseline, full, reference_rounds)
    out.reference = ref
    if ref is None:
        raise AdvisorError("the best configuration failed when measured again against the current settings")
    gain = ref.gain
    out.passes = path.passes
    if ref.ci[0] < options.min_gain:
        out.keep_current = True
        out.why = (f"the best configuration ({len(changed)} changes) measured {gain:+.1%} (95% CI {ref.ci[0]:+.1%} "
                   f".. {ref.ci[1]:+.1%}; {ref.line}) against the current settings: not measurably "
                   f"better (the minimum is {options.min_gain:.0%})")
        return out
    say(f"ablation: the full configuration gains {gain:+.1%} (95% CI {ref.ci[0]:+.1%} .. {ref.ci[1]:+.1%}; "
        f"{ref.line})")

    losses, spread = {n: 0.0 for n in changed}, 0.0
    if len(changed) > options.max_knobs:
        losses, passes = _screen(path, full, changed, statistics.median(ref.candidate))
        spread = _spread([*ref.candidate, *passes])
    order = sorted(changed, key=lambda n: losses[n])
    dropped, lost = _walk(path, full, order, losses, gain, spread, out)
    kept = [n for n in order if n not in dropped]
    _shares(path, full, kept, dropped, 1.0 - (1.0 - gain) * (1.0 + lost), out)
    if not out.shares:
        fall_back(out, kept, path.trials.space.catalog, path.options.rounds, gain, path.say)
    out.config = path.config(full, set(changed) - set(out.kept))
    out.passes = path.passes
    if not out.shares:
        out.keep_current = True
        # a headline, short by construction: what each change measured is its own row (``out.dropped``), shown
        # under "not recommended"
        out.why = (f"none of its {len(changed)} changes pays on its own (each one's figures: under "
                   '"not recommended")')
    say(f"ablation: {len(out.shares)} of {out.changed} knob(s) kept after {path.passes} passes"
        + (": " + ", ".join(f"{s.knob} ({s.share:.0%} of the gain)" for s in out.shares)
           if out.shares and not out.fallback else ""))
    return out


def _plan_inert(path: _Path, full: dict[str, str], changed: list[str]) -> list[str]:
    """The changed knobs only the planner reads (``KnobSpec.plans_only``) that change no statement's plan beside
    the others: ``full`` and ``full`` without them (one at a time, each kept out once it passes) plan every
    statement of the replay the same way (``Plan.shape``), so they cannot move its time and need no timing (a
    planner setting's share of a gain is otherwise measured in whole-workload passes, at the machine's noise).
    [] where the runner replays no statements, a configuration cannot be set, or a statement cannot be planned."""
    statements = getattr(path.trials.runner, "statements", None)
    catalog = path.trials.space.catalog
    planner = [n for n in changed if catalog[n].plans_only]
    if not statements or not planner:
        return []
    sql = [s.sql for s in statements]

    def shapes(config: dict[str, str]) -> list[str]:
        path.trials.apply(config)
        return [p.shape() for p in path.trials.shadow.connector.plans(sql)]

    out: list[str] = []
    try:
        with_all = shapes(full)
        for name in planner:
            if shapes(path.config(full, {*out, name})) == with_all:
                out.append(name)
    except AdvisorError:
        return []
    return out


def _screen(path: _Path, full: dict[str, str], changed: list[str],
            full_ms: float) -> tuple[dict[str, float], list[float]]:
    """One pass of ``full`` without each knob, beside passes of ``full``: each knob's loss, a fraction of
    ``full``'s time (inf when ``full`` without it cannot run), and the passes of ``full``."""
    path.say(f"ablation: screening {len(changed)} knobs, one pass each without it")
    losses: dict[str, float] = {}
    group: list[tuple[str, float | None]] = []
    first = path.one_pass(full)
    passes = [first] if first else []
    before = first or full_ms

    def settle(after: float) -> None:
        reference = (before + after) / 2
        for name, ms in group:
            losses[name] = float("inf") if ms is None else ms / reference - 1.0
        group.clear()

    for i, name in enumerate(changed):
        group.append((name, path.one_pass(path.config(full, {name}))))
        if len(group) == SCREEN_REFERENCE_EVERY or i == len(changed) - 1:
            after = path.one_pass(full)
            passes += [after] if after else []
            settle(after or before)
            before = after or before
    path.say("ablation: screening (the workload with each knob against without it): "
             + ", ".join(f"{n} {slower_faster(1.0 / (1.0 + losses[n]) - 1.0, 0)}"
                         for n in sorted(changed, key=losses.get)))
    return losses, passes


def _spread(passes: list[float]) -> float:
    """How far passes of one configuration lie apart: (max - min) / median, a fraction (the noise band of a
    single pass).

    >>> _spread([100.0, 110.0, 90.0])
    0.2
    """
    return (max(passes) - min(passes)) / statistics.median(passes) if len(passes) > 1 else 0.0


def _walk(path: _Path, full: dict[str, str], order: list[str], losses: dict[str, float], gain: float,
          spread: float, out: Ablation) -> tuple[set[str], float]:
    """Step 3: the knobs dropped, cheapest first, each drop measured against ``full``, and what the drops cost
    (a fraction of ``full``'s time). ``spread``: the noise band of one screening pass."""
    options = path.options
    if len(order) <= options.max_knobs:
        return set(), 0.0
    room = options.max_loss * gain / (1.0 - gain)  # max_loss of the gain, as a fraction of full's time
    limit = 0.5 * gain / (1.0 - gain)  # half the gain: more is never taken for noise
    noise = sum(1 for n in order if losses[n] < max(room, spread))
    tries = [m for m in dict.fromkeys([max(noise, len(order) - options.max_knobs), noise]) if m > 0]
    dropped: set[str] = set()
    lost, lines = 0.0, {}
    steps = 0
    while tries and steps < options.max_steps:
        m = tries.pop(0)
        steps += 1
        cmp = path.compare(full, path.config(full, set(order[:m])))
        if cmp is not None and _holds(cmp, room, limit):
            dropped, lost = set(order[:m]), max(-cmp.gain, 0.0)
            lines = dict.fromkeys(dropped, cmp.line)
            path.say(f"ablation: dropping the {m} cheapest knob(s) keeps the gain (without them the workload was "
                     f"{slower_faster(-cmp.gain)}, 95% CI {-cmp.ci[1]:+.1%} .. {-cmp.ci[0]:+.1%} of its time)")
            break
        path.say(f"ablation: dropping the {m} cheapest knob(s) costs too much"
                 + (f" (without them the workload was {slower_faster(-cmp.gain)})" if cmp is not None
                    else " (that configuration failed)"))
        if not tries and m > 1:
            tries.append(m // 2)
    # then one at a time, while more than max_knobs are left, until the loss leaves the noise band
    for name in order[len(dropped):]:
        if len(order) - len(dropped) <= options.max_knobs or steps >= options.max_steps:
            break
        steps += 1
        cmp = path.compare(full, path.config(full, dropped | {name}))
        if cmp is None or not _holds(cmp, room, limit):
            path.say(f"ablation: dropping {name} as well costs too much; the path stops")
            break
        dropped.add(name)
        lost, lines[name] = max(-cmp.gain, 0.0), cmp.line
    capped = order[len(dropped):len(order) - options.max_knobs]  # the budget ended with too many left
    for name in order:
        if name in dropped or name in capped:
            why = (f"within noise: the reduced set keeps the gain without it (one screening pass: "
                   f"{with_it(losses[name])})" if name in dropped else
                   f"not among the {options.max_knobs} knobs that screened most valuable (one screening pass: "
                   f"{with_it(losses[name])}): its part of the gain could not be told from noise")
            out.dropped.append(DroppedKnob(name, _shown(path, name, path.baseline[name]),
                                           _shown(path, name, full[name]), why, lines.get(name, "")))
    if capped:
        path.say(f"ablation: {len(capped)} more knob(s) left out, keeping the {options.max_knobs} that screened "
                 "most valuable")
    return dropped | set(capped), lost


def _holds(cmp: ObjectiveComparison, room: float, limit: float) -> bool:
    """The reduced configuration (the comparison's candidate) keeps the full one's gain: it loses at most
    ``room``, or its loss is within noise (not significant) and at most ``limit`` (fractions of the full one's
    time: ``max_loss`` and half of its gain).

    >>> from advisor.core.domain import Evidence
    >>> from advisor.tuning.knobs.trials import ObjectiveComparison
    >>> C = lambda gain, ci: ObjectiveComparison(Evidence(3, (), (), gain, ci, (), 0.02, 0.1))
    >>> _holds(C(-0.05, (-0.2, 0.1)), 0.1, 0.5), _holds(C(-0.3, (-0.6, 0.1)), 0.1, 0.5)
    (True, True)
    >>> _holds(C(-0.3, (-0.6, -0.1)), 0.1, 0.5), _holds(C(-0.6, (-0.9, 0.1)), 0.1, 0.5)
    (False, False)
    """
    return -cmp.gain <= room or (not cmp.significant_loss and -cmp.gain <= limit)


def _shares(path: _Path, full: dict[str, str], kept: list[str], dropped: set[str], gain: float,
            out: Ablation) -> None:
    """Step 4: each kept knob removed in turn from the kept set; those that do not pay are dropped too. ``gain``:
    the kept set's gain as the path measured it (the shares are put over the validated gain later:
    ``Ablation.rescale``)."""
    without = set(dropped)
    catalog = path.trials.space.catalog
    for name in kept:
        current = path.config(full, without)
        restart = catalog[name].needs_restart
        row = (name, _shown(path, name, path.baseline[name]), _shown(path, name, full[name]))
        # the one knob the path left (without it: the current settings): its loss is the gain the path measured,
        # F's less what the path lost, and validation measures it again
        last = len(kept) == 1
        line = ""
        if last:
            loss, significant = gain / (1.0 - gain), True
        else:
            path.say(f"ablation: measuring {name}'s share ({path.options.rounds} rounds without it)")
            cmp = path.compare(current, path.config(full, without | {name}))
            if cmp is None:  # without it the configuration fails: it stays, its share unknown
                out.shares.append(KnobShare(*row, share=float("nan"), saves=float("nan"), restart=restart))
                continue
            loss, significant, line = -cmp.gain, cmp.significant_loss, cmp.line
        share, saves, why = verdict(loss, significant, gain, restart, path.options)
        if why is None and share < path.options.confirm_below and not last:  # a small share: measured again
            path.say(f"ablation: {name} carries {share:.0%} of the gain; measuring it again")
            again = path.compare(current, path.config(full, without | {name}))
            if again is not None:
                loss, significant = (loss - again.gain) / 2, significant and again.significant_loss
                line = f"{line}; again: {again.line}"
                share, saves, why = verdict(loss, significant, gain, restart, path.options)
        if why is None:
            out.shares.append(KnobShare(*row, share=share, saves=saves, restart=restart, loss=loss, measured=line))
            continue
        out.dropped.append(DroppedKnob(*row, why=why, measured=line))
        if not significant:
            out.untold[name] = loss
        without.add(name)
    out.rescale(gain)


def _shown(path: _Path, name: str, value: str) -> str:
    space = path.trials.space
    return space.units.shown(space.catalog[name], value)
