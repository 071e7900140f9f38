"""What a kind of tuning is (``Kind``: one entry of the registry in ``advisor.tuning.kinds``) and what its
pipeline gets from the service (``Context``). Each kind's package holds its entry (``<kind>/kind.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.core.progress import Say, silent
from advisor.tuning.observe import observe
from advisor.tuning.plan import COMMON, RunPlan
from advisor.tuning.shadows import Shadows


@dataclass(frozen=True)
class Context:
    """What a pipeline gets from the service: the store, the target's connector (opened once per run by the
    service; pipelines, replay and loaders take it or a shadow's, never a DSN) and name, where the target's models
    live, the run's id (its state is the service's to record) and ``say`` for progress. ``inputs``: values that
    are not plan options (a knob run's hardware override, an LLM seeder, a run to resume; a rewrite run's SQL).
    ``observation``: a snapshot taken already (a whole run's steps share one). ``shadows``: where every shadow of
    the run comes from (a thin clone of the target's warm replica, a full or a sampled copy), the service's choice.
    ``open_run(target_id, kind, optimizer, options, resume, existing)``: the run row a pipeline stores its
    trials under: ``existing`` (the context's ``run_id``) with the options added, ``resume`` taken over, or a new
    one; the service records how a row it opened ends. ``target_id``: the stored target the run goes under when
    the service knows it without observing (a plan its kind runs without the database, ``Kind.own_target``);
    None: the pipeline's observation of the target says.
    ``connector`` is None for a plan run without any database."""

    store: object
    connector: object  # connectors.base.Connector: the run's one connector to the target
    name: str | None = None
    run_id: str | None = None
    say: Say = silent
    model_dir: Callable[[str], Path] | None = None
    device: str = "auto"
    inputs: dict = field(default_factory=dict)
    open_run: Callable[..., str] | None = None
    observation: object = None  # taken already (a whole run's, shared by its steps); None: each run observes
    shadows: Shadows = field(default_factory=Shadows)  # where its shadows come from (advisor.tuning.shadows)
    target_id: str | None = None  # the run's stored target, when known without observing

    def stored_target(self, connector) -> str | None:
        """The id of the target the run is stored under: the context's own, else the observation's."""
        return self.target_id if self.target_id is not None else self.observed(connector).target_id

    def observed(self, connector):
        """The target's observation: the one this context carries, else a new snapshot (stored)."""
        return self.observation if self.observation is not None else \
            observe(self.store, connector, self.name, 0.0, self.say)


@dataclass(frozen=True)
class Kind:
    """One kind of tuning. ``plan``: its plan class (``plan.RunPlan`` with the kind's own options, declared in the
    kind's folder); ``options`` the names of those besides ``plan.COMMON``, ``required`` those it cannot default;
    ``optimizers``: its listed optimizer classes (none for a kind that runs other kinds);
    ``handed_over``: its recommendations go to people (never applied to a database); ``check_target``: what it
    checks of a plan against the target's connector before any work (a rewrite run's given SQL); ``confine``: the
    plan a remote face (REST, the web UI, a schedule: the server acts as its own OS user) may run, its inputs
    confined to what the server's settings allow (a learned index's key file), AdvisorError for what they refuse.
    ``own_target``: for a kind some of whose plans need no target database, the name of the target of its own
    that a run of ``plan`` is stored under (no DSN, engine ``own_target_engine``; ``targets list`` shows it so),
    or None when that plan needs the database; without it every plan needs one. The service honours it for
    every face: no database is opened for such a plan unless one is given, and none is observed."""

    name: str
    summary: str
    run: Callable[[Context, object], object]
    optimizers: tuple[type, ...] = ()
    change_types: tuple[type, ...] = ()
    plan: type = RunPlan
    handed_over: bool = False
    default_optimizer: str | None = None
    check_plan: Callable[[object], None] | None = None
    check_target: Callable[[object, object], None] | None = None
    confine: Callable[[object], object] | None = None
    summarize: Callable[[object], dict] | None = None
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the values a "names" option may hold
    title: str = ""  # what people call one of its recommendations ("Index recommendation")
    uses_shadows: bool = True  # its runs measure on shadows of the target (advisor.tuning.shadows)
    own_target: Callable[[object], str | None] | None = None  # see the docstring: plans needing no database
    own_target_engine: str = ""  # what ``targets list`` shows as the engine of such a target
    # its shipped model's training (``advisor train``): (seed, episodes or None, out dir or None, device, say) -> what
    # was trained, with a one-line ``summary``; None: the kind ships no model (``advisor.tuning.pretrained``)
    train_shipped: Callable[..., dict] | None = None
    predicted_basis: str = "best search trial vs the baseline trial, one pass"  # what its predicted gain estimates
    auto_applies: bool = False  # a schedule may apply its validated recommendations by itself (knobs a DBA lists)
    # its faces, as data (its folder's ``face`` module): what a result shows a person (``advisor.core.report``), and
    # its JSON document (a face expands each ``Recommendation`` in it with its headline numbers)
    report: Callable[[object], object] | None = None
    document: Callable[[object], dict] | None = None
    explain: Callable[[list], object] | None = None  # why, per statement, from a recommendation's details["explain"]
    # what a run takes besides its plan from a person's command line (``plan.Option`` each: a knob run's hardware, an
    # index run's training device), and how they become the service's ``inputs`` (``take``: values by name -> inputs;
    # None: as they are, the unset ones left out); ``displays``: switches of what its report shows (``report``'s
    # keywords: an index run's ``explain``)
    composite: bool = False  # it runs other kinds (the whole advisor): ``advisor tune`` itself, not a sub-command
    inputs: tuple = ()
    take: Callable[[dict], dict] | None = None
    displays: tuple = ()
    # its page in the web UI: ``page`` the Jinja file in its folder (``page.html``) whose macros fill slots of the
    # generic run and recommendation pages (a slot it leaves out shows the generic piece; None: the generic pages
    # only), ``page_data`` what those macros draw of a stored recommendation, as data (its details; None where
    # they are not of the shape its page draws: the generic page then)
    page: Path | None = None
    page_data: Callable[[object], dict | None] | None = None

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(name for name in self.plan.options() if name not in COMMON)

    @property
    def required(self) -> tuple[str, ...]:
        return self.plan.required()

    def target_of_its_own(self, plan) -> str | None:
        """The name of the target of its own a run of ``plan`` goes under (it needs no database), else None."""
        return self.own_target(plan) if self.own_target is not None else None

    def page_of(self, rec) -> dict | None:
        """What its page draws of the recommendation ``rec`` (``page_data``; {} without it); None: the generic page
        (the kind has no page, or ``rec``'s details are not of the shape it draws)."""
        if self.page is None:
            return None
        return self.page_data(rec) if self.page_data is not None else {}

    def taken(self, values: dict) -> dict:
        """The service's ``inputs`` of a command line's ``values`` of ``inputs`` (``take``)."""
        if self.take is not None:
            return self.take(values)
        return {name: v for name, v in values.items() if v is not None}

    def shown(self, result, **displays):
        """What ``result`` shows a person (``report``, with ``displays``; without one: its recommendation, else its
        message)."""
        from advisor.core import report as r

        if self.report is not None:
            return self.report(result, **displays)
        rec = getattr(result, "recommendation", None)
        return r.Report((r.Recommendation(rec),) if rec is not None else (r.Text(result.message or ""),))

    def documented(self, result) -> dict:
        """``result`` as JSON (``document``; without one: the run row's outcome)."""
        return self.document(result) if self.document is not None else self.outcome(result)

    def outcome(self, result) -> dict:
        """What a run's row records of this kind's result (``summarize``, else ``default_outcome``)."""
        return (self.summarize or default_outcome)(result)

    @property
    def lifecycle(self) -> str:
        return "handed over" if self.handed_over else "applied"

    def optimizer_names(self) -> tuple[str, ...]:
        return tuple(sorted(cls.name for cls in self.optimizers))

    def checked(self, plan: RunPlan, *, remote: bool = False) -> RunPlan:
        """``plan`` with its defaults filled in (the kind's default optimizer); AdvisorError naming the first bad
        field, an optimizer the kind does not list, or what the kind's own check refuses. ``remote``: the plan comes
        from a remote face (REST, the web UI, a schedule), which the server runs as its own OS user: its inputs are
        confined to what the server's settings allow (``confine``: a key file only from ``key_files_dir``), the plan
        that comes back holding them as resolved."""
        optimizer = plan.optimizer or self.default_optimizer
        listed = self.optimizer_names()
        if listed and optimizer not in listed:
            raise AdvisorError(f"no {self.name} optimizer named {optimizer!r}"
                               f"{did_you_mean(str(optimizer), listed)}; choose one of {', '.join(listed)}")
        plan.check_values()
        plan = dataclasses.replace(plan, optimizer=optimizer)
        if self.check_plan is not None:
            self.check_plan(plan)
        if remote and self.confine is not None:
            plan = self.confine(plan)
        return plan

def default_outcome(result) -> dict:
    """What a run's row records of a pipeline's result: its recommendation, its state, the message, and when
    nothing was recommended, the reasons per statement (``explain``) and what was tried (``dropped``)."""
    rec = result.recommendation
    explain = tuple(getattr(result, "explain", ()) or ()) if rec is None else ()
    dropped = tuple(getattr(result, "dropped", ()) or ()) if rec is None else ()
    return {"recommendation": rec.id if rec else None, "recommendations": [rec.id] if rec else [],
            "state": rec.state if rec else None, "message": result.message,
            **({"explain": list(explain)} if explain else {}), **({"dropped": list(dropped)} if dropped else {})}


def ledger_of(ctx: Context, target_id: str, kind: str, plan):
    """(the run's id, its ``Ledger``) for a kind that validates candidates (indexes, rewrites): the run row opened
    as every kind opens it (``Context.open_run``: ``inputs["resume"]`` taken over, the context's run, or a new one),
    and with ``resume`` the candidates it stored read back, to be reused rather than measured again."""
    from advisor.tuning.ledger import Ledger

    resume = ctx.inputs.get("resume")
    if ctx.open_run is None:
        return ctx.run_id, Ledger()
    run_id = ctx.open_run(target_id, kind, plan.optimizer, plan.to_dict(), resume, ctx.run_id)
    return run_id, Ledger.of(ctx.store, run_id, target_id, plan.optimizer or kind, resume=bool(resume), say=ctx.say)


def validation_of(ctx: Context, plan):
    """The validation a run does: None when the plan switches it off, else ``ctx.inputs["validation"]`` (a
    bench's or a test's ``ValidationOptions``) with the plan's rounds, or the defaults with them."""
    import dataclasses

    from advisor.tuning.validation import ValidationOptions

    if not plan.validate:
        return None
    return dataclasses.replace(ctx.inputs.get("validation") or ValidationOptions(), rounds=plan.rounds)
