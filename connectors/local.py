"""Engine-neutral plumbing for local sandbox servers: free loopback ports, process liveness, and the registry of
running sandboxes that an ``atexit`` hook stops (the CLI turns SIGTERM/SIGHUP into a normal exit, so it runs).

Every engine's sandbox registers itself here on start and unregisters on stop, so one ``stop_all()`` cleans up
PostgreSQL and MariaDB servers alike.

No exit hook runs after ``kill -9``, so every sandbox directory also holds an owner record (``owner.json``: the
owner's PID, its start time and the engine). ``reap_orphans`` stops and removes the sandboxes whose owner is gone,
with the stopper each engine registers (``register_engine``); it never touches a directory without a record.
The same records let the fault benches find the servers running under a directory (``running_servers``, with the
finder each engine registers) and crash one (``kill_server``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

OWNER_FILE = "owner.json"
PREFIX = "advisor-"  # every sandbox directory's name starts with it (tempfile.mkdtemp(prefix="advisor-<name>-"))
log = logging.getLogger("advisor.sandbox")


class _Stoppable(Protocol):
    def stop(self) -> None: ...


_live: set[_Stoppable] = set()
_live_lock = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (the first is the state, field 3 of proc(5))."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie, exited but not yet reaped by its parent, does not)."""
    fields = _stat(pid)
    return bool(fields) and fields[0] not in {"Z", "X"}


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot): with the PID, it names one process, not a reused PID."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


# --- processes of a server ----------------------------------------------------------------------------------


def server_processes(data_dir: Path) -> list[int]:
    """Live processes of the server of ``data_dir``: those whose working directory is ``data_dir`` or whose command
    line names it. A server's processes keep that working directory when their leader (a postmaster) is killed
    and they are reparented, so they are found by it; a reused PID is not."""
    names = {str(data_dir), os.path.realpath(data_dir)}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc: nothing to find
        return []
    return [pid for pid in pids if pid != os.getpid() and pid_alive(pid) and _in_dir(pid, names)]


def _in_dir(pid: int, names: set[str]) -> bool:
    try:
        if os.path.realpath(f"/proc/{pid}/cwd") in names:
            return True
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = set(f.read().split(b"\0"))
    except OSError:
        return False
    return any(name.encode() in args for name in names)


def wait_gone(pids: Callable[[], Iterable[int]], timeout_s: float) -> list[int]:
    """Poll until ``pids()`` is empty or ``timeout_s`` passed; what is left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = list(pids())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def end_server(data_dir: Path, leader: int | None = None, grace_s: float = 5.0, timeout_s: float = 20.0) -> list[int]:
    """Make sure nothing of the server of ``data_dir`` runs any more: SIGKILL its ``leader`` (a postmaster) and
    SIGQUIT the rest (a PostgreSQL backend exits at once on it), SIGKILL what is left after ``grace_s``; each time
    wait, polling, for them to be gone. Returns what still runs after ``timeout_s`` (empty when all went)."""
    procs = lambda: server_processes(data_dir)  # noqa: E731
    for sig, wait_s in ((signal.SIGQUIT, grace_s), (signal.SIGKILL, timeout_s)):
        left = procs()
        if not left:
            return []
        for pid in left:
            _signal(pid, signal.SIGKILL if pid == leader else sig)
        left = wait_gone(procs, wait_s)
        if not left:
            return []
    return left


def _signal(pid: int | None, sig: int) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


# --- owner records and orphans ------------------------------------------------------------------------------


def bytes_under(path: Path) -> int:
    """The bytes of the files under ``path`` (a copy's progress: a base backup, a physical seed); files that go
    away while counted count as none."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def write_owner(root: Path, engine: str, **extra: str) -> None:
    """Record in the sandbox directory ``root`` that this process owns it (written whole or not at all)."""
    record = {"pid": os.getpid(), "start_time": start_time(os.getpid()), "engine": engine, **extra}
    tmp = root / (OWNER_FILE + ".tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, root / OWNER_FILE)


SECRET_FILE = "password"  # a sandbox's own login's password: mode 0600, owned by the advisor's uid


def write_secret(root: Path) -> str:
    """A new random password for the sandbox's own login (``secrets``: 192 bits, letters, digits, ``-`` and ``_``,
    so that it needs no quoting in any DSN form), kept in ``root/password`` (created here, mode 0600, by this
    process: the advisor's uid owns it) and returned. Every sandbox admits only its own login with it (issue 42)."""
    password = secrets.token_urlsafe(24)
    write_private(root / SECRET_FILE, password + "\n")
    return password


def write_private(path: Path, text: str, owner: tuple[int, int] | None = None) -> None:
    """``text`` in the new file ``path`` (an existing one is an error), of mode 0600 from its creation on, given to
    ``owner`` (uid, gid) when named, else this process's."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if owner is not None:
            os.fchown(f.fileno(), *owner)
        f.write(text)


def read_secret(root: Path) -> str | None:
    """The password ``write_secret`` kept in the sandbox directory ``root`` (None when there is none)."""
    try:
        return (root / SECRET_FILE).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def read_owner(root: Path) -> dict | None:
    try:
        record = json.loads((root / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


def owner_alive(record: dict) -> bool:
    """Whether the process that wrote the owner record still runs (the same process, not a reused PID)."""
    pid = record["pid"]
    return pid_alive(pid) and (record.get("start_time") is None or start_time(pid) == record["start_time"])


_stoppers: dict[str, Callable[[Path, dict], None]] = {}


def register_engine(engine: str, stop_orphan: Callable[[Path, dict], None]) -> None:
    """How to stop an engine's orphaned server: ``stop_orphan(root, owner_record)``, called before ``root`` is
    removed. Each engine's sandbox module registers one when imported."""
    _stoppers[engine] = stop_orphan


def reap_orphans(base_dir: str | Path | None = None) -> list[str]:
    """Stop and remove the sandboxes under ``base_dir`` (default: the temp directory) whose owner process is gone;
    the directories removed. A sandbox whose owner runs, a directory without an owner record, or one of an engine
    with no registered stopper is left alone."""
    base = Path(base_dir or tempfile.gettempdir())
    reaped = []
    for root in sorted(base.glob(PREFIX + "*")):
        record = read_owner(root) if root.is_dir() else None
        if record is None or owner_alive(record):
            continue
        stop = _stoppers.get(str(record.get("engine")))
        if stop is None:
            log.info("orphaned sandbox %s of engine %s left alone: no stopper", root, record.get("engine"))
            continue
        try:
            stop(root, record)
        except Exception as e:  # noqa: BLE001 - one orphan that cannot be stopped must not stop the others
            log.warning("orphaned sandbox %s could not be stopped: %s", root, e)
            continue
        shutil.rmtree(root, ignore_errors=True)
        if not root.exists():
            reaped.append(str(root))
            log.info("reaped orphaned sandbox %s (owner process %s is gone)", root, record["pid"])
    return reaped


def register(sandbox: _Stoppable) -> None:
    """Remember a started sandbox, so that ``stop_all`` stops it."""
    with _live_lock:
        _live.add(sandbox)


def unregister(sandbox: _Stoppable) -> None:
    with _live_lock:
        _live.discard(sandbox)


def stop_all() -> None:
    """Stop every sandbox this process still has running (of any engine)."""
    with _live_lock:
        live = list(_live)
    for sandbox in live:
        with contextlib.suppress(Exception):
            sandbox.stop()


atexit.register(stop_all)


def disk_note(path: str | Path, min_free_bytes: int = 32 * 2**20) -> str:
    """``"; the disk is full (PATH: N MiB free of M MiB)"`` when the filesystem under ``path`` has less
    than ``min_free_bytes`` (or 1%) free, else ``""``: what a server that cannot start or write should say.

    >>> disk_note("/", min_free_bytes=0)
    ''
    """
    import shutil

    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return ""
    if usage.free >= min_free_bytes and usage.free >= usage.total * 0.01:
        return ""
    return f"; the disk is full ({path}: {usage.free / 2**20:.0f} MiB free of {usage.total / 2**20:.0f} MiB)"


# --- servers found from their directories (the fault benches, issue 30) ---------------------------------------


@dataclass(frozen=True)
class RunningServer:
    """The server of a sandbox directory, found running whichever process started it (a shadow of another
    advisor): its engine, the sandbox directory, the data directory, its leader process (PostgreSQL's postmaster,
    mariadbd), its port, and a DSN of its default database as the sandbox's own login."""

    engine: str
    root: Path
    data: Path
    pid: int
    port: int | None
    dsn: str


_finders: dict[str, Callable[[Path], RunningServer | None]] = {}


def register_server_finder(engine: str, find: Callable[[Path], RunningServer | None]) -> None:
    """How to read an engine's running server from its sandbox directory (its pid file): ``find(root)``, None
    when none runs. Each engine's sandbox module registers one when imported."""
    _finders[engine] = find


def find_server(root: Path) -> RunningServer | None:
    """The running server of the sandbox directory ``root`` (of any engine registered), None when none runs."""
    record = read_owner(root) if root.is_dir() else None
    find = _finders.get(str((record or {}).get("engine")))
    return find(root) if find is not None else None


def running_servers(base: str | Path) -> list[RunningServer]:
    """The running servers of the sandbox directories in ``base`` and in its subdirectories (one level down)."""
    base = Path(base)
    roots = sorted({*base.glob(PREFIX + "*"), *base.glob("*/" + PREFIX + "*")})
    return [server for root in roots if (server := find_server(root)) is not None]


def kill_server(server: RunningServer) -> None:
    """SIGKILL the server and every process of it (a crash, as after ``kill -9``), wait until they are gone, and
    remove its sandbox directory."""
    end_server(server.data, leader=server.pid)
    shutil.rmtree(server.root, ignore_errors=True)
