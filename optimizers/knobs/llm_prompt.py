"""What the LLM seeder says and reads: the JSON schema of an answer (the space's knob names as its only
properties), the prompt (workload, hardware, searched knobs with ranges and units) and the defensive reading of an
answer (fences, prose, bare lists, other key names). The engine's words (its name, where the workload was read, its
memory model and orderings) come from the space's knob profile. The client is in ``optimizers.knobs.llm``."""

from __future__ import annotations

import json
import re

from optimizers.knobs.features import WorkloadFeatures
from optimizers.knobs.space import KnobSpace, human_bytes

ANSWER_SHAPE = '{"configs": [{"knobs": {"<knob name>": "<value as text, with its unit>"}, "reason": "<one sentence>"}]}'


class BadAnswer(Exception):
    """The model's answer could not be used; the message says why (and is told to the model on a retry)."""


# --- the answer's schema -------------------------------------------------------------------------------------------


def answer_schema(space: KnobSpace) -> dict:
    """The JSON schema of an answer, for ``response_format``: ``{"configs": [{"knobs": {...}, "reason": str}]}``
    where ``knobs`` has exactly the space's knob names as properties and no others. Every property is required
    and nullable (null: leave the knob as it is), as OpenAI's strict mode wants; choices are enumerated, numbers
    without a unit typed, sizes and times text with their unit."""
    knobs: dict[str, dict] = {}
    for d in space.dimensions:
        value = ({"type": "string", "enum": list(d.choices)} if d.categorical else {"type": "string"}
                 if space.units.unit_factor(d.spec.unit)[0] in {"memory", "time"} else
                 {"type": "integer" if d.spec.vartype == "integer" else "number"})
        knobs[d.name] = {"anyOf": [value, {"type": "null"}]}
    config = {"type": "object",
              "properties": {"knobs": {"type": "object", "properties": knobs, "required": list(knobs),
                                       "additionalProperties": False},
                             "reason": {"type": "string"}},
              "required": ["knobs", "reason"], "additionalProperties": False}
    return {"type": "object", "properties": {"configs": {"type": "array", "items": config}},
            "required": ["configs"], "additionalProperties": False}


# --- the prompt ------------------------------------------------------------------------------------------------


def system(space: KnobSpace) -> str:
    """The system message: an expert of the space's engine who answers in JSON only."""
    return (f"You are a {space.profile.engine} performance expert. You tune server configuration knobs for a given "
            "workload and machine. You answer with a single JSON object and nothing else: no prose, no markdown.")


def prompt(space: KnobSpace, features: WorkloadFeatures, n: int) -> str:
    """The user message: machine, workload, the searched knobs, the memory budget and the answer's shape."""
    hw = space.hardware
    f = features.to_dict()
    current = space.default_config()
    budget = space.options.memory_fraction * hw.memory_bytes
    profile = space.profile
    lines = [
        f"Propose {n} different {profile.engine} configurations to try first when tuning this server for its workload.",
        "",
        "Machine:",
        f"- memory: {human_bytes(hw.memory_bytes)} ({hw.memory_bytes} bytes)",
        f"- CPU cores: {hw.cores}",
        f"- storage: {hw.storage}",
        "",
        f"Workload (observed from {profile.statistics_source}):",
        f"- kind: {f.get('kind', 'mixed')}",
        f"- statements: {f.get('statements', 0)} distinct, {f.get('calls', 0)} calls, "
        f"mean {f.get('mean_ms', 0.0):g} ms per call",
        f"- read share (of calls): {f.get('read_share', 0.0):.0%}, write share: {1 - f.get('read_share', 0.0):.0%}",
        f"- share of time in statements that join: {f.get('join_share', 0.0):.0%}",
        f"- share of time in statements that aggregate (GROUP BY, aggregates, DISTINCT): "
        f"{f.get('aggregate_share', 0.0):.0%}",
        f"- share of time in statements that sort (ORDER BY, window functions): {f.get('sort_share', 0.0):.0%}",
        f"- widest join: {f.get('max_relations', 0)} relations in one statement",
        f"- data size: {human_bytes(f.get('data_bytes', 0))} ({f.get('data_bytes', 0)} bytes)",
        "",
        "Knobs you may set (only these; one JSON object per line; 'current' is the server's value now, "
        "'low'..'high' the range searched; 'special' a value with its own meaning, allowed as well; "
        "'restart' means a change needs a server restart):",
    ]
    for d in space.describe():
        entry: dict[str, object] = {"name": d["name"], "current": current.get(d["name"])}
        if d["choices"]:
            entry["choices"] = d["choices"]
        else:
            entry["low"], entry["high"] = d["low"], d["high"]
            unit = _unit_hint(space, d["name"])
            if unit:
                entry["unit"] = unit
            if d["special"] is not None:
                entry["special"] = d["special"]
        entry["restart"] = d["restart"]
        spec = space.catalog.get(d["name"])
        if spec is not None and spec.description:
            entry["description"] = spec.description
        lines.append(json.dumps(entry))
    orderings = [f"{o.low} <= {o.high}" for o in profile.orderings
                 if o.low in space.catalog and o.high in space.catalog]
    lines += [
        "",
        f"Memory budget: {profile.memory.formula(space.active_connections())} must stay under {human_bytes(budget)} "
        f"({space.options.memory_fraction:.0%} of RAM)." + (f" Keep {' and '.join(orderings)}." if orderings else ""),
        "",
        f"Make the {n} configurations differ (e.g. a cautious one and bolder ones); leave out knobs whose "
        f"current value is already right (or set them to null). Write each value as {profile.engine} accepts it, "
        "sizes and times as text with their unit (\"512MB\", \"5min\"), switches by name (\"on\").",
        f"Answer with only a JSON object of this shape: {ANSWER_SHAPE}",
    ]
    return "\n".join(lines)


def _unit_hint(space: KnobSpace, name: str) -> str | None:
    spec = space.catalog.get(name)
    family = space.units.unit_factor(spec.unit)[0] if spec is not None else None
    return {"memory": "a size: write it with a unit, e.g. 64MB or 2GB",
            "time": f"{spec and spec.unit} when written without a unit; or give one, e.g. 5min, 200ms"}.get(family)


# --- reading answers -------------------------------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_REASON_KEYS = ("reason", "reasoning", "rationale", "why", "explanation")
_LIST_KEYS = ("configs", "configurations", "candidates", "seeds")


def configs_of(answer: str) -> list[tuple[dict[str, object], str]]:
    """(knobs, reason) for each configuration of an answer; BadAnswer when there is none. Knob names are
    lower-cased (servers read them case-insensitively); values are left for ``sanitize`` to judge."""
    document = _json_in(answer)
    if isinstance(document, list):
        items = document
    elif isinstance(document, dict):
        named = next((k for k in _LIST_KEYS if k in document), None)
        items = document[named] if named else None
        if isinstance(items, dict):  # {"configs": {"cautious": {...}, "bold": {...}}} or one configuration
            items = list(items.values()) if items and all(isinstance(v, dict) for v in items.values()) else [items]
        elif named and not isinstance(items, list):
            raise BadAnswer(f"\"{named}\" must be a list of configurations, not a JSON {type(items).__name__}")
        if items is None:
            lists = [v for v in document.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
            items = lists[0] if len(lists) == 1 else [document]  # a single configuration
    else:
        raise BadAnswer(f"expected a JSON object with \"configs\", got a JSON {type(document).__name__}")
    out: list[tuple[dict[str, object], str]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        knobs = item.get("knobs", item.get("config", item.get("settings")))
        if not isinstance(knobs, dict):
            knobs = {k: v for k, v in item.items() if k not in _REASON_KEYS and not isinstance(v, (dict, list))}
        reason = next((item[k] for k in _REASON_KEYS if isinstance(item.get(k), str)), "")
        cleaned = {str(k).strip().lower(): v for k, v in knobs.items() if v is not None}  # null: left as is
        if cleaned:
            out.append((cleaned, " ".join(str(reason).split())[:500]))
    if not out:
        raise BadAnswer("it has no configuration: expected {\"configs\": [{\"knobs\": {...}}]} with at least one "
                        "knob")
    return out


def _json_in(answer: str):
    """The first JSON object or list in ``answer``: all of it, a fenced block, or one embedded in prose."""
    text = _THINK.sub("", answer or "").strip()
    if not text:
        raise BadAnswer("the answer is empty")
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        for m in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, m.start())
            except ValueError:
                continue
            if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(x, dict) for x in value)):
                return value
    excerpt = " ".join(text.split())
    raise BadAnswer(f"it is not valid JSON: {excerpt[:80]!r}{'...' if len(excerpt) > 80 else ''}")
