"""Seeds: the first configurations a search tries (LLMTune-style). An LLM proposes them when one is configured
(optimizers.knobs.llm); otherwise, or when it fails, hardware and workload rules do. Every seed, whatever its
source, goes through ``sanitize``: knobs outside the space are dropped with a warning, values are checked against
the catalog and moved into the searched range, and the resource constraints are repaired.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from advisor.core.domain import Hardware
from advisor.core.errors import AdvisorError, InvalidKnobValue
from optimizers.knobs.features import WorkloadFeatures
from optimizers.knobs.space import KnobSpace

MB = 1024**2


class SeedingFailed(AdvisorError):
    """A seeder could not produce any usable configuration."""


@dataclass(frozen=True)
class Seed:
    config: dict[str, str]  # knob -> text; only knobs of the space
    source: str  # rules | workload-rules | llm:<model>
    reason: str = ""
    notes: tuple[str, ...] = field(default=())  # what sanitizing changed
    combines: tuple[str, ...] = ()  # the sources of the seeds this one is made of (tried only when they all won)


def sanitize(space: KnobSpace, raw: Mapping[str, object], source: str, reason: str = "") -> tuple[Seed | None, list[str]]:
    """A seed made safe for ``space``, and warnings for what was dropped or changed. None when nothing usable
    is left."""
    warnings: list[str] = []
    dims = {d.name: d for d in space.dimensions}
    config: dict[str, str] = {}
    for name, value in raw.items():
        dim = dims.get(str(name))
        if dim is None:
            why = "not a setting of this server" if name not in space.catalog else "not in the searched space"
            warnings.append(f"{source}: dropped {name!r} ({why})")
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        if not isinstance(value, (str, int, float)) or (isinstance(value, float) and not math.isfinite(value)):
            warnings.append(f"{source}: dropped {name} = {value!r} (not a value)")
            continue
        text = str(value).strip()
        try:
            u = dim.to_unit(text)
        except InvalidKnobValue as e:
            warnings.append(f"{source}: dropped {name} = {text!r} ({e})")
            continue
        fitted = dim.from_unit(u)
        if not dim.categorical and not space.units.same_value(dim.spec, fitted, text):
            try:
                in_catalog = space.units.check(dim.spec, text)
            except InvalidKnobValue:
                in_catalog = None
            if in_catalog is None or not _within(dim, text):
                warnings.append(f"{source}: {name} = {text} moved into the searched range ({fitted})")
            else:
                fitted = in_catalog
        config[dim.name] = fitted
    if not config:
        return None, warnings + [f"{source}: no usable knob in the answer"]
    repaired, notes = space.repair(config)
    warnings += [f"{source}: {n}" for n in notes]
    return Seed(repaired, source, reason, tuple(notes)), warnings


def _within(dim, text: str) -> bool:
    base = dim.units.to_base(dim.spec, text)
    return dim.low <= base <= dim.high or (dim.special is not None and math.isclose(base, dim.special))


# --- rules -------------------------------------------------------------------------------------------------------


def rule_seeds(space: KnobSpace, features: WorkloadFeatures) -> tuple[list[Seed], list[str]]:
    """Up to three seeds: the engine's workload rules alone (small, targeted), its hardware rules (PGTune for
    PostgreSQL), and both (``combines`` the other two: the trial loop tries it only when both beat the baseline;
    on the knob bench's generated workloads the hardware rules often lost, and their union then spent a trial of
    eight on what had already lost)."""
    hw: Hardware = space.hardware
    profile = space.profile
    tuned = profile.hardware_rules(hw, features.kind, profile.max_connections(space.catalog))
    hardware_cfg: dict[str, object] = {}
    for name, (value, family, _reason) in tuned.items():
        if name not in {d.name for d in space.dimensions} or family == "literal":
            continue
        hardware_cfg[name] = profile.units.format_bytes(value // MB * MB if value >= 16 * MB else value) \
            if family == "memory" else value
    workload_cfg, why = profile.workload_rules(space.catalog, hw, features)
    rules = profile.rules_name
    candidates = [(workload_cfg, "workload-rules", "; ".join(why)),
                  (hardware_cfg, "rules", f"{rules} hardware rules"),
                  ({**hardware_cfg, **workload_cfg}, "rules+workload", f"{rules} rules with the workload rules on top")]
    seeds: list[Seed] = []
    warnings: list[str] = []
    for raw, source, reason in candidates:
        if not raw:
            continue
        seed, warn = sanitize(space, {k: v for k, v in raw.items() if k in {d.name for d in space.dimensions}},
                              source, reason)
        warnings += warn
        if seed is not None and all(seed.config != s.config for s in seeds):
            made_of = tuple(s.source for s in seeds) if source == "rules+workload" else ()
            seeds.append(replace(seed, combines=made_of) if len(made_of) > 1 else seed)
    return seeds, warnings


# --- the seeding step --------------------------------------------------------------------------------------------

SeedCache = tuple[Callable[[str], list[dict] | None], Callable[[str, list[dict]], None]]


def seeds_for(space: KnobSpace, features: WorkloadFeatures, n: int = 3, llm=None,
              cache: SeedCache | None = None, warn: Callable[[str], None] | None = None) -> list[Seed]:
    """The seeds for a run: from ``llm`` (an ``LLMSeeder``) when given and it answers, from the rules
    otherwise; cached by (hardware, workload fingerprint, knobs, source)."""
    from optimizers.knobs.features import fingerprint

    warn = warn or (lambda _m: None)
    source = f"llm:{llm.model}" if llm is not None else "rules"
    key = f"{source}:{fingerprint(features, space.hardware, space.names)}"
    if cache is not None:
        hit = cache[0](key)
        if hit:  # checked again: the space's ranges and budget may be narrower than when it was cached
            fresh = [sanitize(space, s["config"], s["source"], s.get("reason", ""))[0] for s in hit]
            if all(f is not None for f in fresh):
                return [replace(f, combines=tuple(s.get("combines") or ())) for f, s in zip(fresh, hit) if f]
    seeds: list[Seed] = []
    if llm is not None:
        try:
            seeds, warnings = llm.seeds(space, features, n)
            for w in warnings:
                warn(w)
        except Exception as e:  # noqa: BLE001 - any seeder failure falls back to the rules; the run goes on
            warn(f"LLM seeding failed ({e}); using the rules instead")
            seeds = []
    if not seeds:
        seeds, warnings = rule_seeds(space, features)
        for w in warnings:
            warn(w)
        source = "rules"
        key = f"{source}:{fingerprint(features, space.hardware, space.names)}"
    seeds = seeds[:max(n, 1)]
    if cache is not None and seeds:
        cache[1](key, [{"config": s.config, "source": s.source, "reason": s.reason, "notes": list(s.notes),
                        "combines": list(s.combines)} for s in seeds])
    return seeds
