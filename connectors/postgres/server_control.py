"""How a local PostgreSQL server's processes are run and stopped: its tools run as the ``postgres`` user when we
are root (``as_server_user``, ``run_tool``), ``pg_ctl`` at the measurements' priority, ``halt`` (whatever state the
server is in, leave it stopped and startable: a killed postmaster's backends ended, stale lock files removed), and
``wait_until_accepting``. Shared by the sandbox (``connectors.postgres.sandbox``) and the warm replicas."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from advisor.core import priority
from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import pid_alive
from connectors.postgres.connection import redact


def running_as_root() -> bool:
    return os.geteuid() == 0


def as_server_user(*args: str) -> list[str]:
    if running_as_root():
        return ["runuser", "-u", "postgres", "--", *args]
    return list(args)


def run_tool(name: str, *args: str, timeout: float = 120, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*(prefix or []), *as_server_user(*args)], capture_output=True, text=True,
                              timeout=timeout, check=True)
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or e.stdout or "").strip().splitlines()[-3:]
        raise SandboxError(f"{Path(args[0]).name} failed for sandbox {name}: {' | '.join(tail)}") from None
    except subprocess.TimeoutExpired:
        raise SandboxError(f"{Path(args[0]).name} timed out after {timeout:.0f}s for sandbox {name}") from None


def pg_ctl(name: str, bin_dir: Path, data: Path, action: str, *extra: str, log: Path | None = None,
            timeout: float = 120, raised: bool = True) -> None:
    args = [str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", str(int(timeout))]
    if action in {"start", "restart"} and log is not None:
        args += ["-l", str(log)]
    # a started server that is measured on runs at the measurements' priority, as every process it starts does
    # (advisor.core.priority); a warm replica, which only follows its target, does not (``raised=False``)
    prefix = priority.server_prefix() if raised and action in {"start", "restart"} else []
    run_tool(name, *args, action, *extra, timeout=timeout + 10, prefix=prefix)


def lock_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def halt(name: str, bin_dir: Path, data: Path, run_dir: Path, modes: tuple[str, ...] = ("immediate",)) -> None:
    """Whatever state the server of ``data`` is in, leave it stopped and startable: stop a running postmaster
    with pg_ctl (``modes`` in turn), end every process of the server that is left (a killed postmaster's backends,
    a postmaster pg_ctl could not stop) and wait until they are gone, then remove the lock files
    (postmaster.pid, the socket's .lock) whose PID is dead. SandboxError when processes will not end."""
    pid = lock_pid(data / "postmaster.pid")
    if pid is not None and pid in local.server_processes(data):  # a live postmaster of this data directory
        for mode in modes:
            try:
                pg_ctl(name, bin_dir, data, "stop", "-m", mode, timeout=30)
                break
            except SandboxError:
                continue
    left = local.end_server(data, leader=pid)
    if left:
        raise SandboxError(f"processes {left} of the old server of sandbox {name} did not end")
    for lock in [data / "postmaster.pid", *run_dir.glob(".s.PGSQL.*.lock")]:
        owner = lock_pid(lock)
        if owner is None or not pid_alive(owner):
            lock.unlink(missing_ok=True)


def wait_until_accepting(dsn: str, timeout_s: float = 30.0) -> None:
    """Block until a server accepts connections."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise SandboxError(f"server at {redact(dsn)} did not accept connections within {timeout_s:.0f}s") \
                    from None
            time.sleep(0.1)
