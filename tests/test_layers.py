"""The import-linter contracts of pyproject.toml hold for this repository, checked by pytest itself.

`test_the_repository_keeps_every_import_contract` runs `lint-imports` (contracts in [tool.importlinter] of
pyproject.toml) over this checkout and fails naming each broken contract, so plain `pytest` (and `make test`,
which runs only pytest) checks the layers. `test_lint_imports_fails_on_a_lower_layer_importing_a_higher_one`
proves the tool is live: on a tiny fake package tree in a temporary directory, with a temporary config shaped
like ours (a layer of independent siblings joined by `|`), lint-imports passes while the tree is clean, and
fails naming the contract and the offending import once a module in a lower layer imports a higher one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

# A name nothing installed uses, so the copy in the temporary directory is the one found.
REPO = Path(__file__).resolve().parents[1]

PKG = "layerfake_app"
CONTRACT_NAME = "Fake layers: top > left | right > bottom"

CONFIG = f"""\
[tool.importlinter]
root_packages = ["{PKG}"]
exclude_type_checking_imports = true

[[tool.importlinter.contracts]]
id = "fake-layers"
name = "{CONTRACT_NAME}"
type = "layers"
layers = [
    "{PKG}.top",
    "{PKG}.left | {PKG}.right",
    "{PKG}.bottom",
]
"""

CLEAN_TREE = {
    "__init__.py": "",
    "top/__init__.py": "",
    "top/api.py": f"from {PKG}.left import views\nfrom {PKG}.right import jobs\n",
    "left/__init__.py": "",
    "left/views.py": f"from {PKG}.bottom import util\n",
    "right/__init__.py": "",
    "right/jobs.py": f"from {PKG}.bottom import util\n",
    "bottom/__init__.py": "",
    "bottom/util.py": "VALUE = 1\n",
}


def _lint_imports_exe() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.exists() else shutil.which("lint-imports")
    assert found, "lint-imports not found: install the dev extras (import-linter is pinned in constraints.txt)"
    return found


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / PKG / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_COLOR")}
    # wide, colourless output so the contract name and import lines are never wrapped or styled
    env.update(COLUMNS="1000", NO_COLOR="1", TERM="dumb", PYTHONPATH=str(root))
    return subprocess.run(
        [_lint_imports_exe(), "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_lint_imports_fails_on_a_lower_layer_importing_a_higher_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    _write_tree(tmp_path, CLEAN_TREE)

    clean = _lint(tmp_path)
    assert clean.returncode == 0, f"clean fake tree should pass:\n{clean.stdout}\n{clean.stderr}"
    assert f"{CONTRACT_NAME} KEPT" in clean.stdout

    # the bottom layer reaches up into the top layer, and one sibling imports the other
    _write_tree(
        tmp_path,
        {
            "bottom/util.py": f"VALUE = 1\nfrom {PKG}.top import api  # layer violation\n",
            "left/views.py": f"from {PKG}.bottom import util\nfrom {PKG}.right import jobs\n",
        },
    )
    broken = _lint(tmp_path)
    out = broken.stdout + broken.stderr
    assert broken.returncode == 1, f"violations should fail lint-imports:\n{out}"
    assert f"{CONTRACT_NAME} BROKEN" in out
    assert "Contracts: 0 kept, 1 broken." in out
    assert f"{PKG}.bottom is not allowed to import {PKG}.top" in out
    assert f"{PKG}.bottom.util -> {PKG}.top.api (l.2)" in out
    assert f"{PKG}.left is not allowed to import {PKG}.right" in out
    assert f"{PKG}.left.views -> {PKG}.right.jobs (l.2)" in out


def test_the_repository_keeps_every_import_contract() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    names = [c["name"] for c in contracts]
    assert names, "pyproject.toml lists no import-linter contracts"

    run = _lint(REPO)
    out = run.stdout + run.stderr
    lines = [line.strip() for line in out.splitlines()]
    broken = [name for name in names if f"{name} BROKEN" in lines]
    assert not broken, "import contracts broken: " + "; ".join(broken) + f"\n\n{out}"
    # every contract was checked and kept, not skipped or misread
    unchecked = [name for name in names if f"{name} KEPT" not in lines]
    assert not unchecked, "import contracts not reported kept: " + "; ".join(unchecked) + f"\n\n{out}"
    assert run.returncode == 0, out
    assert f"Contracts: {len(names)} kept, 0 broken." in out
