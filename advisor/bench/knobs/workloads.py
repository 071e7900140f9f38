"""Which workloads ``advisor bench knobs`` runs: the built-in suites (``DEFAULT_WORKLOADS``: G* workloads that every
optimizer runs, safety workloads that HiBO and random search run), the generated ones
(``advisor.bench.knobs.generated``), what a command line's names expand to, and the workloads an engine cannot run
(``Skipped``, with the fact that says why)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.bench.knobs import generated
from advisor.core.errors import AdvisorError, NotFound
from connectors import factory
from connectors.base import Connector


def check_engines(engines: tuple[str, ...]) -> tuple[str, ...]:
    """``engines`` when each is one the factory knows (AdvisorError naming the first that is not)."""
    for e in engines:
        factory.supported(e)
    if not engines:
        raise ValueError("no engine given")
    return engines


@dataclass(frozen=True)
class BenchWorkload:
    name: str
    kind: str  # replay | pgbench | generated
    full: bool  # all runs (a G* workload) or the safety runs only
    trials: int


DEFAULT_WORKLOADS = (BenchWorkload("joins", "replay", True, 30), BenchWorkload("lookups", "replay", True, 30),
                     BenchWorkload("planner", "replay", True, 30), BenchWorkload("tpch", "replay", False, 12),
                     BenchWorkload("memory", "replay", False, 12), BenchWorkload("pgbench", "pgbench", False, 10))
GENERATED_TRIALS = 10


def bench_workload(name: str) -> BenchWorkload:
    """A named workload of ``DEFAULT_WORKLOADS`` or a generated one (``generated.parse``)."""
    known = {w.name: w for w in DEFAULT_WORKLOADS}
    if name in known:
        return known[name]
    if generated.parse(name) is not None:
        return BenchWorkload(name, "generated", True, GENERATED_TRIALS)
    raise NotFound(f"unknown bench workload {name!r} (available: {', '.join(known)}, "
                   f"gen-<schema>.s<seed>, multi-<schema>.s<seed> over {', '.join(generated.SCHEMAS)})")


def expand(workloads: tuple[str, ...], schemas: tuple[str, ...], seeds: tuple[str, ...],
           kinds: tuple[str, ...]) -> tuple[str, ...]:
    """The workloads a command line names, ``gen`` standing for every generated one over ``schemas``, ``seeds``
    and ``kinds``; ValueError or NotFound for what is not a workload."""
    if [s for s in schemas if s not in generated.SCHEMAS] or [k for k in kinds if k not in generated.KINDS]:
        raise ValueError(f"schemas from {', '.join(generated.SCHEMAS)}; kinds from {', '.join(generated.KINDS)}")
    numbers = tuple(int(s) for s in seeds)
    out: list[str] = []
    for w in workloads:
        out += generated.names(schemas, numbers, kinds) if w == "gen" else [w]
    for w in out:
        bench_workload(w)
    if not out:
        raise ValueError("no workload given")
    return tuple(dict.fromkeys(out))


class Skipped(Exception):
    """A workload the engine under test cannot run; the message is the fact that says why."""


def _check_client(connector: Connector, wl: BenchWorkload) -> None:
    """Skipped when ``wl`` is driven by a client program (pgbench) that the connector's engine has not."""
    if wl.kind == "pgbench":
        try:
            connector.loader().client_command("pgbench", ["--version"])
        except AdvisorError as e:
            raise Skipped(f"needs the pgbench client: {e}") from None


def pgbench_texts() -> list[str]:
    return ["UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
            "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"]
