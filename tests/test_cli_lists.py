"""What `schedule list` tells a DBA at 80 columns: a schedule's target by its name, its next firing in its own time
zone (named, UTC beside it), and only the options of its kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from advisor.bench.playground import create_shop
from advisor.service.runs import COMMON, kinds


def cli(tmp_path, *args, env=None):
    environ = {k: v for k, v in os.environ.items() if k != "ADVISOR_TARGET_DSN"}
    environ.update({"ADVISOR_STORE": str(tmp_path / "advisor.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "k.key"),
                    "COLUMNS": "80", **(env or {})})
    res = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=environ,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "lists_" + uuid.uuid4().hex[:8])


def test_schedule_list_names_the_target_and_the_zone_of_its_next_firing(tmp_path, shop):
    cli(tmp_path, "targets", "add", "--name", "shop", env={"ADVISOR_TARGET_DSN": shop})
    added = cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "0 2 * * *", "--kind", "all",
                "--timezone", "Europe/Berlin")
    assert " Europe/Berlin (" in added.stdout and "UTC)" in added.stdout, added.stdout
    (s,) = json.loads(cli(tmp_path, "schedule", "list", "--json").stdout)["schedules"]
    assert s["target_name"] == "shop" and s["next_fire_text"].startswith(s["next_fire_text"][:10] + " 02:00 Europe/")
    (plan,) = s["plan"]["runs"]
    assert set(plan) == {"kind", *COMMON, *kinds.get("all").options}  # no learned-index fields in a whole run's
    shown = cli(tmp_path, "schedule", "list").stdout
    assert all(len(line) <= 80 for line in shown.splitlines())
    assert f"schedule {s['id']}: shop, runs all" in shown and s["target_id"] not in shown
    assert f"  next  {s['next_fire_text']}\n" in shown and "  cron  0 2 * * * (Europe/Berlin)\n" in shown
