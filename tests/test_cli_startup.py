"""The CLI starts without PyTorch: every command imports the service, which lists every optimizer, and importing
PyTorch took a second of each call here (2.8 s -> 1.1 s for ``advisor tokens list``). The optimizers that use
it (IA2's TD3, Aurora, the GP of HiBO and GP-BO) import it when they first work (their own tests run them)."""

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
    pipelines = {f"advisor.tuning.{k}.pipeline" for k in ("indexes", "knobs", "rewrites", "whole")}
    assert not pipelines & loaded and "egglog" not in loaded
