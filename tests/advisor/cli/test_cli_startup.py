"""The CLI starts without PyTorch: every command imports the service, which lists every optimizer, and importing
PyTorch took a second of each call here (2.8 s -> 1.1 s for ``advisor tokens list``). The optimizers that use
it (IA2's TD3, Aurora, the GP of HiBO and GP-BO) import it when they first work (their own tests run them)."""

import os
import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return set(out.split())


def test_the_service_and_every_optimizer_load_without_torch():
    loaded = _modules_after("import advisor.cli.main, advisor.service.factory, optimizers.registry")
    assert "optimizers.indexes.ia2" in loaded and "optimizers.knobs.bo" in loaded  # listed, so imported
    assert "torch" not in loaded and "botorch" not in loaded



def test_the_cli_lists_kinds_and_optimizers_without_their_pipelines_or_egglog():
    """Each kind's module imports its pipeline when a run starts, the rewrite optimizers import the e-graph
    (egglog) when a search runs: the CLI builds its options from the kind registry on every call (2.1 s of
    imports -> 0.8 s here)."""
    loaded = _modules_after("import advisor.cli.main, advisor.service.factory, optimizers.registry\n"
                            "from advisor.service.runs import optimizer_names\n"
                            "assert 'saturate' in optimizer_names('rewrites')")
    assert "advisor.tuning.rewrites.kind" in loaded and "optimizers.rewrites.plugins" in loaded  # listed
    pipelines = {f"advisor.tuning.{k}.pipeline" for k in ("indexes", "knobs", "rewrites", "all")}
    assert not pipelines & loaded and "egglog" not in loaded


LAZY = {"torch", "botorch", "egglog", "optuna", "sqlglot", "fastapi", "starlette", "uvicorn", "psycopg", "pymysql",
        "pandas", "sklearn", "smac", "numba", "apscheduler.schedulers"}


def test_help_and_the_reading_commands_import_no_driver_parser_or_web_framework(tmp_path):
    """``advisor --help`` and the commands that read the store (runs, recommendations, targets list) import
    none of the heavy packages: the engines' drivers and sqlglot come with an engine's first use
    (``connectors.factory.Engine``), the web framework with ``serve`` (1.9 s -> 1.1 s for ``runs list`` here,
    side by side on a busy machine). The commands run in one process against a store of their own (and an empty
    temp directory: no orphaned sandbox to reap there)."""
    code = ("import sys\nfrom advisor.cli.main import main\n"
            "for argv in (['--help'], ['runs', 'list'], ['recommendations', 'list'], ['targets', 'list']):\n"
            "    sys.argv = ['advisor', *argv]\n"
            "    assert main() == 0, argv\n"
            "print('LOADED', ' '.join(sys.modules))")
    env = {**os.environ, "ADVISOR_STORE": str(tmp_path / "store.duckdb"), "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    modules = out.stdout.split("LOADED", 1)[1].split()
    loaded = {m.split(".")[0] for m in modules} | {".".join(m.split(".")[:2]) for m in modules}
    assert "advisor" in loaded and "duckdb" in loaded  # the store was read
    assert not loaded & LAZY, sorted(loaded & LAZY)  # the scheduler's engine too: only a server runs one

