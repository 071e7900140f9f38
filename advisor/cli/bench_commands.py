"""``advisor bench ...``: benchmarks on self-started servers (knobs, indexes, the service, faults). Each prints a
table and saves JSON and a plot; the work is in ``advisor.bench``, run through the same pipelines as users'."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli.common import EngineOpt, JsonFlag, optimizer_choice
from advisor.cli.common import emit as _emit_json
from advisor.cli.common import names as _names
from advisor.core.errors import AdvisorError
from advisor.core.progress import reporter
from advisor.cli.bench_knobs import bench_knobs
from advisor.cli.bench_scale import bench_scale

RewriteOptimizer = optimizer_choice("rewrites")  # the registry's
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks on self-started servers: print, save JSON and plots.")


bench_app.command("knobs")(bench_knobs)  # advisor.cli.bench_knobs
bench_app.command("scale")(bench_scale)  # advisor.cli.bench_scale


@bench_app.command("indexes")
def bench_indexes(scale: Annotated[float, typer.Option(help="TPC-H scale factor", min=0.001, max=10)] = 0.2,
                  budgets: Annotated[str, typer.Option(help="comma-separated fractions of the data size")] =
                  "0.05,0.1,0.2,0.35,0.5",
                  mixes: Annotated[int, typer.Option(help="random template mixes", min=1)] = 10,
                  mix_size: Annotated[int, typer.Option(help="templates per mix", min=1, max=22)] = 5,
                  held_out: Annotated[int, typer.Option(help="templates IA2 does not train on", min=0, max=18)] = 4,
                  episodes: Annotated[int, typer.Option(help="IA2 training episodes", min=1)] = 300,
                  samples: Annotated[int, typer.Option(help="IA2 sampled rollouts per recommendation", min=0)] = 48,
                  device: Annotated[str | None, typer.Option(help="IA2 training device: auto, cpu, cuda "
                                                                "(default: ADVISOR_DEVICE)")] = None,
                  rounds: Annotated[int, typer.Option(help="interleaved rounds of the real runs", min=1)] = 3,
                  real: Annotated[bool, typer.Option(help="also build the indexes and run TPC-H for real")] = True,
                  reward: Annotated[str, typer.Option(help="IA2 training reward: relative or per_storage")] =
                  "relative",
                  seed: Annotated[int, typer.Option(help="random seed")] = 0,
                  out: Annotated[str, typer.Option(help="directory for indexes.json and the plot")] =
                  "bench-results/indexes",
                  workloads: Annotated[str, typer.Option(help="comma-separated: tpch (random template mixes), "
                                                              "app (an application on TPC-H data), job (JOB-style "
                                                              "joins on a synthetic IMDB), gen (generated "
                                                              "application workloads: --schemas x --seeds)")] =
                  "tpch",
                  schemas: Annotated[str, typer.Option(help="gen: comma-separated schemas: tpch, job, tpcds")] =
                  "tpch,job,tpcds",
                  seeds: Annotated[str, typer.Option(help="gen: comma-separated generator seeds")] = "1,2",
                  generated: Annotated[int, typer.Option(help="gen: statements per generated workload (TPC-H at "
                                                              "--app-scale, the IMDB at --job-scale)", min=1,
                                                         max=200)] = 15,
                  tpcds_scale: Annotated[float, typer.Option(help="gen: TPC-DS scale factor", min=0.001,
                                                             max=10)] = 0.01,
                  app_scale: Annotated[float, typer.Option(help="app: TPC-H scale factor", min=0.001, max=10)] = 0.05,
                  job_scale: Annotated[float, typer.Option(help="job: synthetic IMDB scale factor", min=0.001,
                                                           max=10)] = 0.05,
                  budget_fraction: Annotated[float, typer.Option(help="app, job: budget as a fraction of the data "
                                                                      "size", min=0.001, max=1)] = 0.25,
                  budget_mb: Annotated[float | None, typer.Option(help="app, job: budget in MB (instead of the "
                                                                      "fraction)", min=0.1)] = None,
                  advisors: Annotated[str, typer.Option(help="app, job, gen: advisors compared (default: "
                                                             "ia2,extend,dexter,supabase,fkeys,noindex; with gen: "
                                                             "ia2,extend,ilp,supabase,fkeys)")] = "",
                  statement_timeout_ms: Annotated[int, typer.Option(help="app, job: statement timeout in the "
                                                                         "validation and the real runs", min=100)] =
                  120_000,
                  engine: EngineOpt = "postgres", json_out: JsonFlag = False) -> None:
    """Index advisors (no index, Dexter, Extend, ILP, IA2) on TPC-H: what-if RC per budget over random mixes,
    then real runs of TPC-H with IA2's and Extend's indexes. With `--workloads app,job`: every advisor and the
    Supabase-style and all-foreign-keys peers through the real pipeline on workloads nobody tuned for, with real
    runtimes. With `gen`: a generated application workload per schema and seed (`gen-<schema>.s<seed>`), the
    ILP and Extend among the peers, and IA2's median and worst runtime ratio to the best peer over them."""
    from advisor.bench.indexes.bench import IndexBench, IndexBenchOptions, table
    from advisor.bench.indexes.sources import SCHEMAS, generated_names, is_known
    from advisor.bench.indexes.workloads import ADVISORS, GENERATED_ADVISORS, WorkloadBench, WorkloadBenchOptions
    from advisor.bench.indexes.workloads import table as workloads_table
    from advisor.core.settings import get_settings

    device = device or get_settings().device
    chosen = [w.strip() for w in workloads.split(",") if w.strip()]
    if "gen" in chosen:
        seed_list = _seeds(seeds)
        bad = [s for s in _names([schemas]) if s not in SCHEMAS]
        if bad or not _names([schemas]) or not seed_list or min(seed_list) < 0:
            raise typer.BadParameter(f"gen needs seeds (integers >= 0) and schemas of {', '.join(SCHEMAS)} "
                                     f"(unknown: {bad})")
        at = chosen.index("gen")
        chosen[at:at + 1] = generated_names(tuple(dict.fromkeys(_names([schemas]))), tuple(dict.fromkeys(seed_list)))
    chosen = list(dict.fromkeys(chosen))  # a workload named twice runs once
    unknown = [w for w in chosen if w != "tpch" and not is_known(w)]
    if unknown or not chosen:
        raise typer.BadParameter(f"unknown workloads {unknown}: choose from tpch, app, job, gen "
                                 f"(or gen-<schema>.s<seed>)")
    if "tpch" not in chosen:
        kinds = [GENERATED_ADVISORS if w.startswith("gen-") else ADVISORS for w in chosen]
        default = tuple(dict.fromkeys(a for each in kinds for a in each))  # every workload's default advisors
        others = WorkloadBenchOptions(
            workloads=tuple(chosen), app_scale=app_scale, job_scale=job_scale, tpcds_scale=tpcds_scale,
            generated_statements=generated, budget_fraction=budget_fraction, budget_mb=budget_mb,
            advisors=_names([advisors]) or default, rounds=rounds, episodes=episodes,
            samples=samples, device=device, seed=seed, statement_timeout_ms=statement_timeout_ms, out_dir=out,
            engine=engine)
        pictures = (["workloads.png"] if any(not w.startswith("gen-") for w in chosen) else []) + \
            (["workloads-generated.png"] if any(w.startswith("gen-") for w in chosen) else [])
        _bench_report(WorkloadBench(others, say=reporter(watch=True)).run(), json_out, workloads_table, out, "workloads.json",
                      *pictures)
        return
    try:
        fractions = tuple(float(b) for b in budgets.split(",") if b.strip())
    except ValueError:
        raise typer.BadParameter(f"budgets must be comma-separated numbers, got {budgets!r}") from None
    if not fractions or any(not 0 < b <= 1 for b in fractions):
        raise typer.BadParameter("every budget must be a fraction of the data size in (0, 1]")
    options = IndexBenchOptions(scale=scale, budgets=fractions, mixes=mixes, mix_size=mix_size, held_out=held_out,
                                episodes=episodes, samples=samples, device=device, rounds=rounds, real=real, seed=seed,
                                out_dir=out,
                                reward=reward, engine=engine)
    _bench_report(IndexBench(options, say=reporter(watch=True)).run(), json_out, table, out, "indexes.json", "indexes-rc.png")
    if len(chosen) > 1:
        bench_indexes(workloads=",".join(w for w in chosen if w != "tpch"), app_scale=app_scale, job_scale=job_scale,
                      tpcds_scale=tpcds_scale, generated=generated, schemas=schemas, seeds=seeds,
                      budget_fraction=budget_fraction, budget_mb=budget_mb, advisors=advisors, episodes=episodes,
                      samples=samples, device=device, rounds=rounds, seed=seed, out=out,
                      statement_timeout_ms=statement_timeout_ms, engine=engine, json_out=json_out)


@bench_app.command("rewrite")
def bench_rewrite(scale: Annotated[float, typer.Option(help="TPC-H scale factor", min=0.001, max=10)] = 0.02,
                  optimizer: Annotated[RewriteOptimizer, typer.Option(help="the rewrite search the pipeline uses")] \
                  = "aurora",
                  rounds: Annotated[int, typer.Option(help="interleaved timing rounds", min=1)] = 3,
                  statement_timeout_ms: Annotated[int, typer.Option(help="statement timeout of the timing and the "
                                                                         "checks", min=100)] = 60_000,
                  seed: Annotated[int, typer.Option(help="random seed")] = 0,
                  episodes: Annotated[int, typer.Option(help="Aurora's training episodes", min=1)] = 300,
                  held_out: Annotated[bool, typer.Option(help="Aurora trains only on statements generated from the "
                                                              "schema, not on the bench's")] = True,
                  only: Annotated[str, typer.Option(help="comma-separated statement names (q1..q22 and the suite's); "
                                                         "default: all")] = "",
                  generated: Annotated[int, typer.Option(help="instead of TPC-H and the suite: this many generated "
                                                              "statements per schema and seed", min=0)] = 0,
                  schemas: Annotated[str, typer.Option(help="--generated: comma-separated schemas: tpch, job, "
                                                            "tpcds")] = "tpch,job,tpcds",
                  seeds: Annotated[str, typer.Option(help="--generated: comma-separated generator seeds")] = "1,2,3",
                  families: Annotated[str, typer.Option(help="--generated: comma-separated shape families "
                                                             "(default: every rewrite family)")] = "",
                  job_scale: Annotated[float, typer.Option(help="--generated: synthetic IMDB scale factor",
                                                           min=0.001, max=10)] = 0.02,
                  tpcds_scale: Annotated[float, typer.Option(help="--generated: TPC-DS scale factor", min=0.001,
                                                             max=10)] = 0.01,
                  out: Annotated[str, typer.Option(help="directory for rewrite.json (rewrite-generated.json) and the "
                                                        "plot")] = "bench-results/rewrite",
                  engine: EngineOpt = "postgres", json_out: JsonFlag = False) -> None:
    """The query rewriter on the 22 TPC-H queries and a suite of rewrite-prone statements: the pipeline's answers,
    sqlglot's optimize() as a peer (its wrong and invalid outputs counted), both timed against the original on one
    shadow, and the search strategies (Aurora, capped saturation, greedy, random) at the same node budget, on a
    server of --engine (the statements transpiled to its SQL; one it cannot run is reported as skipped). With
    `--generated N`: the same flow (without the strategies) on N generated statements per schema and seed,
    reported per shape family."""
    from advisor.bench.rewrites.bench import RewriteBench, RewriteBenchOptions
    from advisor.bench.rewrites.report import table

    options = RewriteBenchOptions(scale=scale, optimizer=optimizer.value, rounds=rounds, episodes=episodes, held_out=held_out,
                                  statement_timeout_ms=statement_timeout_ms, seed=seed, out_dir=out,
                                  only=_names([only]), engine=engine)
    if not generated:
        _bench_report(RewriteBench(options, say=reporter(watch=True)).run(), json_out, table, out, "rewrite.json",
                      "rewrite.png")
        return
    from advisor.bench.rewrites.corpus import REWRITE_FAMILIES, CorpusOptions, GeneratedRewriteBench
    from advisor.bench.rewrites.corpus import table as corpus_table

    seed_list = _seeds(seeds)
    corpus = CorpusOptions(statements=generated, schemas=_names([schemas]), seeds=seed_list,
                           families=_names([families]) or REWRITE_FAMILIES, job_scale=job_scale,
                           tpcds_scale=tpcds_scale)
    try:
        bench = GeneratedRewriteBench(options, corpus, say=reporter(watch=True))
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    _bench_report(bench.run(), json_out, corpus_table, out, "rewrite-generated.json", "rewrite-generated.png")


def _seeds(text: str) -> tuple[int, ...]:
    """A generated mode's ``--seeds``, as integers (a clear error otherwise)."""
    try:
        return tuple(int(s) for s in _names([text]))
    except ValueError:
        raise typer.BadParameter(f"seeds must be comma-separated integers, got {text!r}") from None


def _bench_report(doc: dict, json_out: bool, table, out: str, *saved: str) -> None:
    """A bench's result: its JSON document, or its table and where the files are."""
    if json_out:
        _emit_json(doc)
    else:
        print(table(doc))
        print(f"saved {' and '.join(f'{out}/{name}' for name in saved)}")


def _key_sets(text: str) -> tuple[str, ...]:
    """The bench's key sets: names, or ``held-out`` for the families no shipped model is trained on."""
    from advisor.tuning.learned_index.training import HELD_OUT_SETS

    return tuple(n for name in _names([text]) for n in (HELD_OUT_SETS if name == "held-out" else (name,)))


@bench_app.command("learned-index")
def bench_learned_index(
        datasets: Annotated[str, typer.Option(help="comma-separated synthetic key sets: books, fb, osm, uniform, "
                                                   "normal, lognormal, zipf-clustered, piecewise, bursty, sequential, "
                                                   "mixture; or held-out (normal, zipf-clustered, bursty: the shapes "
                                                   "no shipped model saw). LITune meta-trains on the families not "
                                                   "evaluated")] = "books,fb,osm,uniform,normal",
        workloads: Annotated[str, typer.Option(help="comma-separated mixes: read-only, read-heavy, balanced, "
                                                    "write-heavy")] = "read-only,read-heavy,balanced,write-heavy",
        seeds: Annotated[str, typer.Option(help="comma-separated seeds (key sets and streams)")] = "1,2",
        keys: Annotated[int, typer.Option(help="keys per dataset", min=2000)] = 200_000,
        budget: Annotated[int, typer.Option(help="evaluations per tuner and cell (the defaults' included)",
                                            min=2)] = 30,
        tuners: Annotated[str, typer.Option(help="comma-separated: random, grid, tpe, gp, hibo, litune")] =
        "random,grid,tpe,gp,hibo,litune",
        indexes: Annotated[str, typer.Option(help="comma-separated learned indexes (pgm also joins read-only "
                                                  "workloads)")] = "alex",
        rounds: Annotated[int, typer.Option(help="the validation's round budget per tuner (a clear case stops at 3; "
                                                 "beside a busy CPU a gain near the minimum needs ~12 to settle)",
                                            min=1)] = 12,
        finalists: Annotated[int, typer.Option(help="the search's best configurations re-measured beside the "
                                                    "defaults for the pick (fewer than 2: the search's best)",
                                               min=0)] = 3,
        finalist_rounds: Annotated[int, typer.Option(help="rotating rounds of that re-measure (0: none)",
                                                     min=0)] = 4,
        episodes: Annotated[int, typer.Option(help="LITune's meta-training episodes", min=1)] = 300,
        device: Annotated[str, typer.Option(help="LITune's training device: auto, cpu, cuda")] = "auto",
        litune_model: Annotated[str, typer.Option(help="LITune's model: trained (meta-trained here on the key "
                                                       "families the grid does not evaluate) or shipped (advisor "
                                                       "train's, refused if it saw an evaluated family)")] =
        "trained",
        drift: Annotated[bool, typer.Option(help="run the drift part (online vs one-shot vs re-tuned)")] = True,
        drift_dataset: Annotated[str, typer.Option(help="drift: the key set whose distribution shifts")] = "books",
        drift_from: Annotated[str, typer.Option(help="drift: the first phase's mix")] = "read-heavy",
        drift_to: Annotated[str, typer.Option(help="drift: the last phase's mix")] = "write-heavy",
        drift_phases: Annotated[int, typer.Option(help="drift phases", min=2)] = 3,
        drift_ops: Annotated[int, typer.Option(help="operations per drift phase", min=1000)] = 20_000,
        drift_budget: Annotated[int, typer.Option(help="evaluations per from-scratch tuning under drift (and "
                                                       "LITune's first phase)", min=2)] = 12,
        online_budget: Annotated[int, typer.Option(help="LITune's evaluations in each later drift phase",
                                                   min=2)] = 6,
        meta_train_only: Annotated[bool, typer.Option(help="only time LITune's meta-training (seconds, device, "
                                                          "episodes) and print it as JSON")] = False,
        summarize: Annotated[str | None, typer.Option(help="a saved learned-index.json: recompute its targets and "
                                                           "plots from its measurements, run nothing")] = None,
        out: Annotated[str, typer.Option(help="directory for learned-index.json and the plots")] =
        "bench-results/learned-index",
        json_out: JsonFlag = False) -> None:
    """Learned-index tuners at the same budget per dataset x workload (defaults, random, grid, TPE, GP-BO, HiBO,
    LITune; the sorted-array binary search on the same stream), LITune meta-trained once on held-out tasks, drift
    (LITune online vs a one-shot configuration vs re-tuning from scratch), and the issue's targets."""
    from advisor.bench.learned.bench import LearnedBenchOptions, LearnedIndexBench, meta_train_only as time_meta
    from advisor.bench.learned.bench import summarize as resummarize, table

    if summarize:
        _bench_report(resummarize(summarize, out), json_out, table, out, "learned-index.json", "learned-index.png")
        return
    options = LearnedBenchOptions(
        datasets=_key_sets(datasets), workloads=_names([workloads]), seeds=_seeds(seeds), keys=keys, budget=budget,
        tuners=_names([tuners]), indexes=_names([indexes]), rounds=rounds, finalists=finalists,
        finalist_rounds=finalist_rounds, episodes=episodes, device=device, litune_model=litune_model,
        drift=drift, drift_dataset=drift_dataset, drift_from=drift_from, drift_to=drift_to, drift_phases=drift_phases,
        drift_ops=drift_ops, drift_budget=drift_budget, online_budget=online_budget, out_dir=out)
    if meta_train_only:
        _emit_json(time_meta(options, say=reporter(watch=True)))
        return
    _bench_report(LearnedIndexBench(options, say=reporter(watch=True)).run(), json_out, table, out, "learned-index.json",
                  "learned-index.png", *(["learned-index-drift.png"] if drift else []))


@bench_app.command("service")
def bench_service(clients: Annotated[int, typer.Option(help="concurrent API clients", min=1)] = 50,
                  duration: Annotated[float, typer.Option(help="seconds of API load", min=1)] = 30.0,
                  blocks: Annotated[int, typer.Option(help="pgbench blocks, observation off/on (ABBA), even",
                                                      min=2)] = 12,
                  block_s: Annotated[int, typer.Option(help="seconds per pgbench block", min=5)] = 30,
                  interval: Annotated[float, typer.Option(help="seconds between observations", min=0.5)] = 10.0,
                  scale: Annotated[int, typer.Option(help="pgbench scale", min=1)] = 10,
                  api: Annotated[bool, typer.Option(help="run the API latency part")] = True,
                  observation: Annotated[bool, typer.Option(help="run the observation-overhead part")] = True,
                  out: Annotated[str, typer.Option(help="directory for api.json and observation.json")] =
                  "bench-results/service",
                  engine: EngineOpt = "postgres", json_out: JsonFlag = False) -> None:
    """The server's targets: p99 of GET /api/recommendations with concurrent clients during a tuning run, and
    the throughput cost of observing a database (pgbench with observation off and on, one run)."""
    doc: dict = {}
    say = reporter(watch=True)
    if api:
        from advisor.bench.service.api import ApiBenchOptions, run_api_bench, table as api_table

        doc["api"] = run_api_bench(ApiBenchOptions(clients=clients, duration_s=duration, out_dir=out, engine=engine),
                                   say)
    if observation:
        from advisor.bench.service.observation import ObservationBenchOptions, run_observation_bench, table as obs_table

        doc["observation"] = run_observation_bench(ObservationBenchOptions(
            scale=scale, blocks=blocks, block_s=block_s, interval_s=interval, out_dir=out, engine=engine), say)
    if json_out:
        _emit_json(doc)
        return
    if "api" in doc:
        print(api_table(doc["api"]))
    if "observation" in doc:
        print(obs_table(doc["observation"]))
    print(f"saved under {out}/")


@bench_app.command("faults")
def bench_faults(faults: Annotated[str, typer.Option(help="comma-separated subset (default: all): shadow_kill, "
                                                         "bad_config, target_drop, advisor_kill, api_restart, "
                                                         "disk_full, llm, prod_lock, concurrent_approve, cli_kill9, "
                                                         "target_stop_during_dump")] = "",
                 out: Annotated[str, typer.Option(help="directory for faults.json and the plot")] =
                 "bench-results/faults",
                 keep: Annotated[bool, typer.Option(help="keep the work directory (store, servers' files)")] = False,
                 engine: EngineOpt = "postgres", json_out: JsonFlag = False) -> None:
    """Inject faults against real servers (a killed shadow, advisor or server, a bad configuration, dropped
    connections, a full disk, a bad LLM endpoint, a production lock, a race of two clients) and report per fault:
    injected, detected, recovered or refused, rows lost, orphaned servers, seconds to recover. Exit 1 unless every
    fault was recovered or refused with a reason, with nothing lost."""
    from advisor.bench.faults.bench import FaultBenchOptions, run_fault_bench, table

    options = FaultBenchOptions(faults=_names([faults]), out_dir=out, keep=keep, engine=engine)
    doc = run_fault_bench(options, say=reporter(watch=True))
    _bench_report(doc, json_out, table, out, "faults.json", "faults.png")
    failed = [f["name"] for f in doc["faults"] if f["verdict"] == "FAILED"]
    if failed or any(doc["lost"].values()):
        raise AdvisorError(f"not every fault was recovered or refused with a reason, with nothing lost: "
                           f"{', '.join(failed) or 'rows lost'} (see the table)")


@bench_app.command("latency")
def bench_latency(engines: Annotated[str, typer.Option(help="comma-separated: postgres, mariadb")] = "postgres",
                  scales: Annotated[str, typer.Option(help="comma-separated TPC-H scale factors (1 is about 1 GB)")]
                  = "1",
                  clones: Annotated[int, typer.Option(help="thin clones timed per size", min=1)] = 3,
                  copies: Annotated[bool, typer.Option(help="time the full and sampled copies beside them")] = True,
                  oneoff: Annotated[bool, typer.Option(help="time the first one-off rewrite after `targets add "
                                                            "--replica`, as a new user runs it")] = True,
                  tune: Annotated[bool, typer.Option(help="time `advisor tune indexes` after `targets add "
                                                          "--replica` and the application's statements, as a new "
                                                          "user runs it")] = False,
                  tune_peers: Annotated[bool, typer.Option(help="with --tune on mariadb: time it again with the "
                                                                "what-if search on a ~50 MB sample of the shadow, "
                                                                "in the same run")] = False,
                  tune_unbatched: Annotated[bool, typer.Option(help="with --tune on mariadb: and with the what-if "
                                                                    "one call at a time (the unbatched path)")]
                  = False,
                  out: Annotated[str, typer.Option(help="directory for latency.json and the plot")] =
                  "bench-results/latency",
                  json_out: JsonFlag = False) -> None:
    """Seconds until a shadow answers, by how it is made: a thin clone of a warm replica beside a full copy
    (pg_dump | pg_restore, mariadb-dump) and a sampled copy, on TPC-H databases of each scale, both in one run."""
    from advisor.bench.latency.bench import LatencyBenchOptions, run, table

    try:
        sizes = tuple(float(s) for s in _names([scales]))
    except ValueError:
        raise typer.BadParameter(f"scales must be comma-separated numbers, got {scales!r}") from None
    options = LatencyBenchOptions(engines=_names([engines]), scales=sizes, clones=clones, copies=copies,
                                  oneoff=oneoff, tune=tune, tune_peers=tune_peers,
                                  tune_unbatched=tune_unbatched, out_dir=out)
    doc = run(options, say=reporter(watch=True))
    _bench_report(doc, json_out, table, out, "latency.json", "latency.png")


@bench_app.command("models")
def bench_models(scratch_episodes: Annotated[int, typer.Option(help="episodes of the per-target training it is "
                                                                     "compared with", min=1)] = 120,
                 ia2_episodes: Annotated[int, typer.Option(help="episodes of IA2's per-target training from "
                                                                 "scratch", min=1)] = 300,
                 out: Annotated[str, typer.Option(help="directory for models.json and the plots")] =
                 "bench-results/models",
                 json_out: JsonFlag = False) -> None:
    """The shipped models (Aurora's rule policy, LITune's models, IA2's agent) on held-out generated schemas, key
    sets and index workloads: as shipped, adapted as a run adapts them, and against one trained from scratch per
    target (quality and seconds before the first answer)."""
    from advisor.bench.models.bench import ModelBenchOptions, run, table

    doc = run(ModelBenchOptions(scratch_episodes=scratch_episodes, ia2_scratch_episodes=ia2_episodes, out_dir=out),
              say=reporter(watch=True))
    _bench_report(doc, json_out, table, out, "models.json", "models.png")
