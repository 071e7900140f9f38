"""The REST API's input and output models (pydantic lives only here and in settings). Outputs never carry
credentials: a target's DSN is shown redacted (no password). Every time is ISO-8601 UTC (``web.times``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, SecretStr, StringConstraints, ValidationInfo,
                      create_model, field_validator)
from pydantic_core import PydanticCustomError

from advisor.core.inputs import CONTROL, CONTROL_IN_TEXT, control_character
from advisor.service.runs import COMMON, RUN_STATES, kinds
from web.times import Details, Timestamp

T = TypeVar("T")

RecState = Literal["proposed", "validated", "rejected", "approved", "applied", "rolled_back"]
RunState = Literal[RUN_STATES]  # type: ignore[valid-type]


REQUIRED_TEXT = f"^[^{CONTROL}]*[^\\s{CONTROL}][^{CONTROL}]*$"  # no control character (as web.guards), not blank
# the same for a script (line breaks and tabs allowed), as the document states it; ``_not_blank`` says why in words
REQUIRED_SCRIPT = f"^[^{CONTROL_IN_TEXT}]*[^\\s{CONTROL_IN_TEXT}][^{CONTROL_IN_TEXT}]*$"


class Strict(BaseModel):
    """An input: unknown fields refused, and no text in it holds a control character (``MULTILINE`` fields may
    hold tabs and line breaks); the error names the field."""

    model_config = ConfigDict(extra="forbid")
    MULTILINE: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        for text in _texts(value):
            bad = control_character(text, multiline=info.field_name in cls.MULTILINE)
            if bad:
                raise ValueError(f"control character {bad} is not allowed")
        return value


def multiline_fields() -> set[tuple[str, str]]:
    """(schema name, field) of every input field that may hold line breaks (``Strict.MULTILINE``)."""
    found, todo = set(), list(Strict.__subclasses__())
    while todo:
        model = todo.pop()
        found |= {(model.__name__, f) for f in model.MULTILINE}
        todo += model.__subclasses__()
    return found


def _texts(value: Any):
    """The strings inside a field's value (secrets included; nested inputs check themselves)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _texts(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)


class Error(BaseModel):
    error: str = Field(description="machine-readable kind: bad_request, unauthorized, forbidden, not_found, "
                                   "conflict, invalid_input, internal_error")
    message: str
    details: list[dict[str, Any]] | None = None


ERRORS = {code: {"model": Error, "description": what} for code, what in (
    (400, "bad input the server understood (e.g. an invalid cron, an unreachable target)"),
    (401, "no token, or an unknown or revoked one"), (403, "the token's role does not allow this"),
    (404, "no such object"), (409, "conflicts with the current state"), (422, "input that fails the schema"))}


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class Health(BaseModel):
    status: Literal["ok"]
    store_schema: int
    scheduler_running: bool
    scheduled_jobs: int
    runs_active: int


class TargetIn(Strict):
    name: str = Field(min_length=1, max_length=200, examples=["orders-prod"])
    dsn: SecretStr = Field(description="the database: a PostgreSQL DSN (postgresql:// URL or libpq key=value "
                           "pairs) or a MariaDB URL (mariadb://); stored encrypted, never returned",
                           examples=["postgresql://advisor:...@10.0.0.5:5432/orders",
                                     "mariadb://advisor:...@10.0.0.6:3306/shop"])
    memory_gb: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False,
                                    description="the server's RAM in GiB, for knob sizes (default: read from the "
                                    "server when it lets the advisor read /proc/meminfo)")
    cpus: int | None = Field(None, ge=1, le=100_000, description="the server's cores (default: as for memory_gb)")
    replica: bool = Field(False, description="also build a warm replica of it, kept in sync, from which every run "
                          "takes thin clones (built in the background; GET /api/targets/{name}/check says what the "
                          "database lacks for one)")


class TargetUpdate(Strict):
    dsn: SecretStr = Field(description="the new DSN, in the target's engine's form (a new password, host or "
                           "port)")
    other_database: bool = Field(False, description="allow the new DSN to reach another database than the one "
                                 "the target was registered for (recommendations made for the old one will not "
                                 "apply to it)")


class Replica(BaseModel):
    state: str = Field(description='"building", "ready" or "failed: <reason>"')
    engine: str
    directory: str = Field(description="where its data lives on the advisor's machine")
    built_at: Timestamp | None
    progress: str | None = Field(None, description="the last line of a build under way")
    lag: str | None = Field(None, description='how far behind the target it is, e.g. "12 kB behind, streaming"')
    behind_bytes: int | None = None
    behind_s: float | None = None


class ReplicaCheck(BaseModel):
    ready: bool = Field(description="nothing is missing: a replica can be built")
    missing: list[dict[str, str]] = Field(description='what the database lacks, each {"what", "fix"}: the line '
                                          "that fixes it (the advisor never changes the target's configuration)")
    notes: list[str] = Field(default_factory=list, description="what a replica would be built without, no blocker "
                             "(a slower seed, say), each with its fix: the `note:` lines of `advisor targets check`")


class Target(BaseModel):
    id: str
    name: str
    engine: str
    dsn: str = Field(description="the DSN without its password")
    created_at: Timestamp
    registered: bool = Field(description="credentials stored, so runs and schedules can use it")
    hardware: dict[str, Any] | None = Field(None, description="what its server runs on, as given by the user "
                                            "(memory_bytes, cores, storage)")
    last_observed_at: Timestamp | None
    last_summary: Details | None
    replica: Replica | None = Field(None, description="its warm replica, when it has one")
    tags: list[str] = Field(default_factory=list, description="what a fleet schedule's tag:NAME selects it by")


class Snapshot(BaseModel):
    id: str
    taken_at: Timestamp
    summary: Details
    statements: int
    total_calls: int


def _option_field(o, required: bool = False, choices: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """A run plan option (``advisor.tuning.plan.Option``) as a pydantic field: type, default, bounds, help."""
    name = o.name
    low, high = o.bounds or (None, None)
    if o.type == "int":
        return int, Field(o.default, ge=low, le=high, description=o.help)
    if o.type == "float":
        return (float if required else float | None), Field(... if required else o.default, gt=low, le=high,
                                                             description=o.help)
    if o.type == "bool":
        return bool, Field(o.default, alias=name, description=o.help)
    if o.type == "names":
        item = Literal[choices] if choices else Annotated[str, StringConstraints(pattern=o.pattern)] if o.pattern \
            else str  # type: ignore[valid-type]
        return list[item], Field(list(o.default), description=o.help)  # type: ignore[valid-type]
    if choices:
        return Literal[choices], Field(o.default, description=o.help)  # type: ignore[valid-type]
    if required:  # a text the kind cannot default: one line, with a character that is not a space
        return str, Field(..., min_length=1, max_length=10_000, pattern=REQUIRED_TEXT, description=o.help)
    if o.multiline:  # a script (a rewrite run's SQL): left out means the default, but given it holds something
        script = Annotated[str, Field(json_schema_extra={"pattern": REQUIRED_SCRIPT}), AfterValidator(_not_blank)]
        return script | None, Field(o.default, max_length=1_000_000, description=o.help)
    return str | None, Field(o.default, max_length=10_000, description=o.help)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank", "holds no text: leave it out for its default")
    return text


def _run_spec(kind, with_target: bool) -> type[BaseModel]:
    """The input model of one kind's run, derived from the kind registry and the plan's options."""
    fields: dict[str, Any] = {"kind": (Literal[kind.name], ...)}  # type: ignore[valid-type]
    names = kind.optimizer_names()
    if names:
        fields["optimizer"] = (Literal[names], Field(kind.default_optimizer,  # type: ignore[valid-type]
                                                     description="the optimizer (one of the kind's listed)"))
    options = kind.plan.options()
    for name in (n for n in (*kind.options, *COMMON) if n != "optimizer"):
        # "validate" would shadow pydantic's BaseModel.validate: the attribute is validate_, the field validate
        fields[name + "_" if name == "validate" else name] = _option_field(options[name], name in kind.required,
                                                                           kind.choices.get(name, ()))
    if with_target and kind.own_target is not None:  # some of its plans need no database (Kind.own_target)
        fields["target"] = (str | None, Field(None, description="target id or name; left out for a plan that needs "
                                                                "no database (a learned index's synthetic keys): "
                                                                "the run goes under a target of its own"))
    elif with_target:
        fields["target"] = (str, Field(description="target id or name"))
    title = "".join(part.capitalize() for part in kind.name.replace("-", "_").split("_"))
    model = create_model(f"{title}Run{'In' if with_target else 'Spec'}", __base__=Strict, __doc__=kind.summary,
                         **fields)
    model.MULTILINE = frozenset(n for n in kind.options if options[n].multiline)  # a SQL script's line breaks
    return model


RUN_SPECS = {k.name: _run_spec(k, False) for k in kinds.kinds()}  # a schedule's runs: no target
RUN_INS = {k.name: _run_spec(k, True) for k in kinds.kinds()}
RunKind = Literal[kinds.names()]  # type: ignore[valid-type]
RunSpec = Annotated[Union[tuple(RUN_SPECS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]
RunIn = Annotated[Union[tuple(RUN_INS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]


class Run(BaseModel):
    id: str
    target_id: str
    kind: str
    optimizer: str
    state: RunState
    options: dict[str, Any]
    progress: Details | None
    result: Details | None
    error: str | None
    started_by: str | None = Field(description="who started it: a token's holder (token:NAME), a schedule "
                                               "(schedule:ID), or the command line (cli (user@host))")
    schedule_id: str | None
    job_id: str | None = Field(None, description="the fleet firing it belongs to (/api/schedules/jobs/JOB_ID)")
    created_at: Timestamp
    updated_at: Timestamp
    target_name: str | None = Field(None, description="its target's name (none for a target removed)")
    trials_done: int = 0
    outcome: str = Field("", description="what the run came to: its state until it is done, then its "
                                         "recommendation's state (validated, rejected, ...) or done when it made none")


class Trial(BaseModel):
    id: str
    number: int | None
    source: str | None
    status: str
    objective: float | None
    config: dict[str, Any] | None
    reason: str | None
    duration_s: float | None
    created_at: Timestamp


class RecommendationSummary(BaseModel):
    """A row of the recommendations list (GET /api/recommendations/{id} has the evidence and the SQL)."""

    id: str
    target_id: str
    target: str | None = Field(description="the target's name (None once the target was removed)")
    kind: str
    optimizer: str
    state: RecState
    needs_restart: bool
    created_at: Timestamp
    updated_at: Timestamp
    run_id: str | None
    changes: int = Field(description="how many changes")
    gain: float | None = Field(description="measured gain on the shadow, 1 - candidate/baseline")
    gain_ci: list[float | None] | None = Field(description="95% interval of the measured gain")
    predicted_gain: float | None = Field(description="what the optimizer expected before validation (an estimate)")
    tone: Literal["good", "bad", "neutral"] = Field("neutral", description="how the measured gain reads: good only "
                                                    "for a recommendation that stands, never for a rejected one")


class Moved(BaseModel):
    queryid: str
    sql: str
    ratio: float | None = Field(description="candidate / baseline, medians (0.5 = twice as fast)")


class Headline(BaseModel):
    """A recommendation's headline numbers (``advisor.service.summary``), the same the CLI and the page show."""

    state: RecState
    verdict: Literal["validated", "not validated", "rejected", "unmeasured"]
    tone: Literal["good", "bad", "neutral"] = Field(description="how the measured gain reads: good only for a "
                                                                "gain of a recommendation that stands")
    rounds: int | None
    baseline_ms: float | None = Field(description="measured baseline workload time, ms: sum over statements of "
                                                  "calls x median latency over the rounds")
    candidate_ms: float | None = Field(description="the same for the candidate")
    gain: float | None = Field(description="1 - candidate_ms / baseline_ms")
    gain_ci: list[float | None] | None = Field(description="95% interval of the gain (paired bootstrap)")
    predicted_gain: float | None = Field(description="an estimate made before measuring (predicted_basis)")
    predicted_basis: str
    helped: list[Moved] = Field(description="statements measured faster (whole 95% interval below 1)")
    regressed: list[Moved] = Field(description="statements whose slowdown blocks the change")
    rare_slower: list[Moved] = Field(description="statements slower but too rare to block")
    unit: str
    baseline_with: str = Field("", description="what the measured baseline includes besides the database as it "
                                               "is (a whole run's later step: the earlier steps' changes); empty "
                                               "when nothing")
    sizes: list[dict[str, str]] = Field([], description="an index recommendation's sizes per index, as every face "
                                                       "prints them: estimated (what-if, counted against the "
                                                       "budget) and built (on the shadow), in MB")
    observed: str = Field("", description="the snapshot the statements' calls come from (its id, when it was "
                                          "taken, its calls and total time); empty when not recorded")
    figures: dict[str, str] = Field({}, description="the texts every face prints for these numbers: baseline, "
                                                    "candidate, gain, gain_ci, predicted, verdict, baseline_label, "
                                                    "observed, line")


class Recommendation(BaseModel):
    id: str
    target_id: str
    kind: str
    optimizer: str
    state: RecState
    changes: list[dict[str, Any]]
    apply_sql: list[str]
    revert_sql: list[str]
    needs_restart: bool
    created_at: Timestamp
    run_id: str | None
    gain: float | None = Field(description="measured gain on the shadow, 1 - candidate/baseline")
    gain_ci: list[float | None] | None = Field(description="95% interval of the gain")
    predicted_gain: float | None = Field(description="what the optimizer expected (what-if or search), when known")
    evidence: Details | None
    details: Details
    applied: Details | None = Field(description="what the apply ran, when, by whom, and its revert SQL")
    watch: Details | None = Field(None, description="the watch after the apply: state (watching, held, "
                                         "unjudged, rolled_back, failed, stopped; ended: its target was removed), "
                                         "started_at, ends_at, window_s, min_calls, max_regression and the last "
                                         "check's figures (ratio: watched statements' latency since the apply over "
                                         "before it)")
    applicable: bool = Field(True, description="False for a query rewrite: it is handed to the statements' owners "
                                               "and never applied to the database; its lifecycle ends at approved")
    summary: Headline | None = Field(None, description="the headline numbers: verdict, measured workload times "
                                     "and gain, the predicted gain as an estimate, statements helped and regressed")


class Note(Strict):
    MULTILINE = frozenset({"note"})
    note: str = Field("", max_length=2000)


class ScheduleIn(Strict):
    target: str
    cron: str = Field(examples=["0 2 * * *"], description="5 cron fields")
    timezone: str = "UTC"
    runs: list[RunSpec] = Field(min_length=1, max_length=10, description="the runs of each firing, in order")
    auto_apply: Literal["none", "reload_knobs"] = "none"
    auto_apply_knobs: list[str] = Field(default_factory=list, description="with reload_knobs: only these knobs")
    max_regression: float = Field(0.10, gt=0, lt=10)


class Schedule(BaseModel):
    id: str
    target_id: str
    cron: str
    timezone: str
    plan: dict[str, Any]
    created_at: Timestamp
    created_by: str | None
    last_fire_at: Timestamp | None
    next_fire_at: Timestamp | None
    next_fire_text: str = Field("-", description="the next firing as the CLI and the page show it: in the "
                                                 "schedule's time zone, named, with UTC beside it")
    last_fire_text: str = Field("-", description="the last firing, shown as next_fire_text")
    target_name: str | None = Field(None, description="its target's name (none for a target removed); a fleet's: "
                                                      "fleet SELECTOR")
    fleet: str | None = Field(None, description="a fleet schedule's selector ('all', 'tag:NAME'); none for one "
                                                "target's")


class FleetScheduleIn(Strict):
    fleet: str = Field(pattern=r"^(all|tag:\S+)$", examples=["tag:nightly"],
                       description="'all' (every registered target) or 'tag:NAME' (the targets tagged NAME, "
                                   "PUT /api/targets/{ref}/tags); each firing one job of one run per target")
    cron: str = Field(examples=["0 2 * * *"], description="5 cron fields")
    timezone: str = "UTC"
    runs: list[RunSpec] = Field(min_length=1, max_length=10, description="the runs of each firing, in order")
    ray: str | None = Field(None, max_length=300, description="the Ray cluster its tasks run on (default: the "
                                                              "server's ADVISOR_RAY; none: the server's threads)")


class FleetJob(BaseModel):
    job_id: str
    schedule_id: str | None
    states: dict[str, int] = Field(description="how many of its runs ended in each state")
    runs: list[Run]


class TagsIn(Strict):
    tags: list[str] = Field(max_length=50, description="the target's tags, replacing the ones it had")


class AuditEntry(BaseModel):
    at: Timestamp
    actor: str
    action: str
    subject: str
    detail: Details


class TokenIn(Strict):
    name: str = Field(min_length=1, max_length=200, examples=["ci-bot"])
    role: Literal["viewer", "operator", "admin"] = Field(
        description="viewer reads; operator also runs, approves, applies; admin also manages tokens")


class Token(BaseModel):
    id: str
    name: str
    role: str
    created_at: Timestamp
    revoked_at: Timestamp | None = None
    created_by: str | None = None


class TokenCreated(Token):
    secret: str = Field(description="send as 'Authorization: Bearer <secret>'; shown only in this answer")
