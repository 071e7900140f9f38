"""The service reaps sandboxes and shadows of killed advisor processes: when it is built (the start of the server
and of every CLI command) and on a timer while the server runs (issue 13, defect #4)."""

import tempfile
import threading

from advisor.service.factory import build_service, start, stop
from connectors import local
from tests.connectors.test_orphans import base, poll, start_orphan  # noqa: F401 - base is a fixture


def test_building_the_service_reaps_the_sandbox_of_a_killed_process_and_says_so(base, tmp_path, monkeypatch):
    root, postmaster = start_orphan(base, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # where sandboxes are made by default
    said: list[str] = []
    service = build_service(tmp_path / "s.duckdb", say=said.append)
    try:
        assert not root.exists() and not local.pid_alive(postmaster)
        assert any(str(root) in line and "killed" in line for line in said)
    finally:
        service.store.close()


def test_the_server_reaps_orphans_on_a_timer(base, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    service = build_service(tmp_path / "s.duckdb", background=True, scheduler=False)
    start(service, reap_interval_s=0.1)
    try:
        root, postmaster = start_orphan(base, tmp_path)  # killed while the server runs
        poll(lambda: not root.exists(), what="the orphan reaped by the timer")
        assert not local.pid_alive(postmaster)
    finally:
        stop(service)
    poll(lambda: not any(t.name == "advisor-reaper" and t.is_alive() for t in threading.enumerate()),
         what="the reaper's thread to end with the server")
