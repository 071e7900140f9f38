"""A rule-based knob seeder: hardware + workload kind -> a configuration, by the engine's rules of thumb (the knob
profile's ``hardware_rules``: PGTune for PostgreSQL).

The rules are the heuristic a DBA would apply by hand (memory fractions, SSD costs, WAL sizes by workload kind).
Every value is clamped to the target's catalog bounds, and knobs already at the proposed value are left out.
Each proposed knob carries its reason (``explain()``).
"""

from __future__ import annotations

from advisor.core.domain import KnobChange
from optimizers.base import Config
from optimizers.knobs.problem import KnobOptimizer

MB = 1024**2


class RulesOptimizer(KnobOptimizer):
    """One configuration from the engine's hardware rules (PGTune's for PostgreSQL), for the problem's hardware,
    workload kind and connection count; ``explain()`` gives each knob's reason. Asked again, it proposes the same
    configuration."""

    name = "rules"
    description = ("the engine's rules of thumb (PGTune for PostgreSQL) from hardware and workload kind "
                   "(a seeder; suggests one configuration)")

    def _setup(self) -> None:
        self.reasons: dict[str, str] = {}

    def explain(self) -> dict[str, str]:
        return dict(self.reasons)

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        catalog = self.problem.space.catalog
        hw = self.problem.space.hardware
        profile = self.problem.space.profile
        units = profile.units
        max_conn = self.problem.max_connections
        if max_conn is None:
            max_conn = profile.max_connections(catalog)
        proposal = profile.hardware_rules(hw, self.problem.workload_kind, max_conn)
        changes: list[KnobChange] = []
        self.reasons = {}
        for name, (value, family, reason) in proposal.items():
            spec = catalog.get(name)
            if spec is None:
                continue
            if family == "literal":
                text = str(value)
            elif family == "memory":
                if value >= 16 * MB:
                    value = value // MB * MB  # whole megabytes read better and change nothing that matters
                _, unit_bytes = units.unit_factor(spec.unit)
                text = units.clamp(spec, value / unit_bytes)
            else:
                text = units.clamp(spec, value)
            if units.same_value(spec, spec.setting, text) if spec.vartype in {"integer", "real"} \
                    else spec.setting == text:
                continue
            changes.append(KnobChange(name, text))
            self.reasons[name] = reason
        return [tuple(changes)]
