"""What every case of ``advisor bench faults`` shares: the bench's own "production" server and store, the advisor
run as a subprocess (the CLI, or ``advisor serve``), progress lines to wait on, the store's ledger of rows, and the
servers left running.

Everything the bench starts lives under one work directory: the store, the key file, and ``tmp/`` (the temporary
directory of the bench process and of every advisor it starts, so every shadow's directory is under it). A server
whose data directory is under the work directory and which is not the bench's production server is a shadow; one
still running after the advisor that started it is gone is an orphan.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx

from advisor.bench.faults.ledger import Ledger
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from connectors import factory  # imported first: it registers every engine's server finder
from connectors.local import RunningServer, kill_server, running_servers
from connectors.local import pid_alive  # noqa: F401 - the cases import it from here

TRIAL = re.compile(r"trial (\d+)/(\d+) \[([^\]]+)\] (.*)")
_STAMP = re.compile(r"^\[\s*[0-9.]+s\] ")
OPERATOR = "faults"  # the bench's API token name (role operator)
ISOLATED = ("ADVISOR_STORE", "ADVISOR_KEY_FILE", "ADVISOR_LLM_URL")  # set for the bench, put back after


class BenchFailure(AdvisorError):
    """The bench itself could not do a step (a server did not start, an awaited event never came)."""


def measured(line_status: str) -> bool:
    """Whether the status part of a trial's progress line is a measurement (not ``failed: ...``)."""
    return not line_status.startswith(("failed", "infeasible"))


# --- progress lines ---------------------------------------------------------------------------------------------


class Lines:
    """Progress messages with the time each arrived: a service's ``say``, or a subprocess's stderr (``follow``).
    ``wait`` blocks until a message matches; the time limits are bounds against a hang, never the trigger."""

    def __init__(self, echo: Say = silent):
        self.items: list[tuple[float, str]] = []
        self.echo = echo
        self._cond = threading.Condition()

    def __call__(self, message: str) -> None:
        text = _STAMP.sub("", message.rstrip("\n"))
        with self._cond:
            self.items.append((time.monotonic(), text))
            self._cond.notify_all()

    def follow(self, stream) -> threading.Thread:
        def pump():
            for line in stream:
                self(line)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        return thread

    def wait(self, pattern: str, *, after: int = 0, timeout_s: float = 300.0,
             alive: Callable[[], bool] | None = None) -> tuple[int, float, re.Match]:
        """(index, arrival time, match) of the first message from index ``after`` on that matches."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for i in range(after, len(self.items)):
                    m = rx.search(self.items[i][1])
                    if m:
                        return i, self.items[i][0], m
                after = len(self.items)
                if alive is not None and not alive():
                    raise BenchFailure(f"the advisor ended before a progress line matched {pattern!r}; last: "
                                       f"{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchFailure(f"no progress line matched {pattern!r} within {timeout_s:g} s; last: "
                                       f"{self.tail()}")
                self._cond.wait(min(left, 0.25))

    def trials(self, after: int = 0) -> list[tuple[int, float, re.Match]]:
        with self._cond:
            return [(i, t, m) for i, (t, text) in enumerate(self.items) if i >= after and (m := TRIAL.search(text))]

    def tail(self, n: int = 3) -> str:
        return " | ".join(text for _, text in self.items[-n:]) or "(nothing)"

    def text(self) -> str:
        return "\n".join(text for _, text in self.items)


# --- servers under the work directory ---------------------------------------------------------------------------


def servers(root: Path) -> dict[int, RunningServer]:
    """Running sandbox servers (of any engine) whose sandbox directory is in ``root`` or one level below it (its
    ``tmp/``, a case's own directory): leader pid -> server."""
    return {s.pid: s for s in running_servers(root)}


# --- the environment ---------------------------------------------------------------------------------------------


@dataclass
class Env:
    """The bench's production server (a sandbox with the shop database, registered as target ``shop``), its
    store, and helpers to run the advisor against them. ``start`` / ``close`` (or ``with``)."""

    work: Path
    say: Say = silent
    engine: str = factory.DEFAULT_ENGINE  # of the production server
    prod: object = None
    dsn: str = ""
    secret: str = ""
    _saved: dict | None = None  # what ``start`` changed in this process, put back by ``close``
    _servers: list = field(default_factory=list)

    @property
    def store_path(self) -> Path:
        return self.work / "advisor.duckdb"

    @property
    def tmp(self) -> Path:
        return self.work / "tmp"

    def __enter__(self) -> "Env":
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> "Env":
        from advisor.bench.playground import create_shop

        self.tmp.mkdir(parents=True, exist_ok=True)
        os.chmod(self.work, 0o755)  # sandboxes run as the engine's own user when the bench runs as root
        os.chmod(self.tmp, 0o1777)  # a temporary directory, like /tmp
        # this process's shadows go under work/; its key file is the subprocesses'; no LLM endpoint of the caller's
        self._saved = {"tempdir": tempfile.tempdir, "env": {k: os.environ.get(k) for k in ISOLATED}}
        tempfile.tempdir = str(self.tmp)
        os.environ.update(self.isolated())
        self.say("starting the bench's production server (a sandbox with the shop database)")
        self.prod = factory.sandbox(self.engine, "faults-prod", durable=False)
        self.prod.start()
        self.dsn = create_shop(self.prod)
        self.run_workload()
        with self.service() as service:
            _, self.secret = service.create_token(OPERATOR, "operator")
            service.add_target("shop", self.dsn)
        return self

    def run_workload(self, rounds: int = 20) -> None:
        """The shop's statements again, plus a report over the whole table (a statement that takes a while)."""
        from advisor.bench.playground import run_shop_workload

        run_shop_workload(self.dsn, rounds=rounds)
        with factory.connector(self.dsn).session() as session:
            for _ in range(3):
                session.run("SELECT customer % 100 AS bucket, count(*), sum(amount) FROM orders "
                            "GROUP BY 1 ORDER BY 3 DESC LIMIT 10")

    def close(self) -> None:
        for server in list(self._servers):
            server.stop()
        if self.prod is not None:
            self.prod.stop()
        for server in servers(self.work).values():
            kill_server(server)
        if self._saved is not None:
            tempfile.tempdir = self._saved["tempdir"]
            for k, v in self._saved["env"].items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self._saved = None

    # --- the advisor in this process ------------------------------------------------------------------------

    @contextmanager
    def service(self, say: Say | None = None) -> Iterator:
        """The service over the bench's store, in this process (no server may hold the store meanwhile)."""
        from advisor.service.factory import build_service

        service = build_service(self.store_path, say=say or silent)
        try:
            yield service
        finally:
            service.store.close()

    @contextmanager
    def store(self) -> Iterator:
        """The bench's store opened for the bench's own reads and bookkeeping: not through ``build_service``, which
        would also reap orphaned shadows and so hide what the advisor under test leaves behind."""
        from advisor.storage.store import open_store

        store = open_store(self.store_path)
        try:
            yield store
        finally:
            store.close()

    def ledger(self) -> Ledger:
        with self.store() as store:
            return Ledger.read(store)

    # --- the advisor as a subprocess ------------------------------------------------------------------------

    def isolated(self) -> dict[str, str]:
        return {"ADVISOR_STORE": str(self.store_path), "ADVISOR_KEY_FILE": str(self.work / "secret.key"),
                "ADVISOR_LLM_URL": ""}

    def child_env(self, tmpdir: Path | None = None) -> dict[str, str]:
        return {**os.environ, **self.isolated(), "TMPDIR": str(tmpdir or self.tmp), "PYTHONUNBUFFERED": "1"}

    def advisor(self, *args: str, lines: Lines, tmpdir: Path | None = None, **popen) -> subprocess.Popen:
        """``advisor ARGS`` as a subprocess of its own session, its stderr (progress) into ``lines``."""
        proc = subprocess.Popen([sys.executable, "-m", "advisor", *args], env=self.child_env(tmpdir),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                **popen)
        lines.follow(proc.stderr)
        return proc

    def server(self, scheduler: bool = False) -> "Server":
        server = Server(self, scheduler)
        self._servers.append(server)
        return server

    # --- leftovers ------------------------------------------------------------------------------------------

    def shadows(self) -> dict[int, RunningServer]:
        """Running servers under the work directory other than the production server."""
        prod = self.prod.port if self.prod is not None else None
        return {pid: s for pid, s in servers(self.work).items() if s.port != prod}

    def clean_orphans(self, base_dirs: tuple[Path, ...] = ()) -> str:
        """Stop the shadows still running: with ``connectors.factory.reap_orphans`` when this version has it, and
        by killing what is left. Says which did it."""
        how = []
        reap = getattr(factory, "reap_orphans", None)
        if reap is not None and self.shadows():
            for base in (self.tmp, *base_dirs):
                try:
                    reap(base)
                except Exception as e:  # noqa: BLE001 - reported, then the bench kills what is left
                    how.append(f"reap_orphans failed: {type(e).__name__}: {e}")
            how.append("connectors.factory.reap_orphans")
        left = self.shadows()
        for server in left.values():
            kill_server(server)
        if left:
            how.append(f"the bench killed {len(left)} (reap_orphans {'left them' if reap else 'does not exist yet'})")
        return "; ".join(how)


class Server:
    """``advisor serve`` as a subprocess on a free loopback port, with an operator client."""

    def __init__(self, env: Env, scheduler: bool):
        self.env = env
        self.scheduler = scheduler
        self.lines = Lines()
        self.proc: subprocess.Popen | None = None
        self.port = factory.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.client = httpx.Client(base_url=self.base, headers=self.auth(), timeout=120)

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.env.secret}"}

    def start(self, timeout_s: float = 120.0) -> float:
        """Start it and wait (polling /api/health) until it answers; the seconds that took."""
        args = ["serve", "--port", str(self.port), "--store", str(self.env.store_path)]
        self.proc = self.env.advisor(*args, *([] if self.scheduler else ["--no-scheduler"]), lines=self.lines)
        started = time.monotonic()
        deadline = started + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchFailure(f"advisor serve exited ({self.proc.returncode}): {self.lines.tail()}")
            try:
                if self.client.get("/api/health", timeout=5).status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise BenchFailure(f"advisor serve did not answer within {timeout_s:g} s: {self.lines.tail()}")

    def kill(self) -> None:
        """SIGKILL the server process alone (its shadows stay, as after an OOM kill)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        if self in self.env._servers:
            self.env._servers.remove(self)

    def wait_run(self, predicate: Callable[[dict], bool], run_id: str | None = None, *,
                 find: Callable[[dict], bool] | None = None, timeout_s: float = 300.0) -> dict:
        """Poll the API until a run (``run_id``, or the newest of the shop's runs that ``find`` accepts) satisfies
        ``predicate``; the run as the API shows it."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BenchFailure(f"advisor serve exited ({self.proc.returncode}): {self.lines.tail()}")
            if run_id is None:
                items = self.client.get("/api/runs", params={"target": "shop", "limit": 20}).json()["items"]
                found = [r for r in items if find is None or find(r)]
                last = self.client.get(f"/api/runs/{found[0]['id']}").json() if found else None
            else:
                last = self.client.get(f"/api/runs/{run_id}").json()
            if last is not None and predicate(last):
                return last
            time.sleep(0.05)
        raise BenchFailure(f"no run reached the awaited state within {timeout_s:g} s (last: "
                           f"{(last or {}).get('state')}, {(last or {}).get('trials_done')} trials)")
