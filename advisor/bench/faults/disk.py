"""The shadow's disk filling up during a run (``advisor bench faults``).

Where this container allows it (root, or CAP_SYS_ADMIN), a small tmpfs is mounted for the bench and made the
advisor's TMPDIR, so its shadow lives there; after the first trial a ballast file fills it and keeps it full (it
takes every page the server frees) until the bench frees it. Where nothing can be mounted, the advisor runs with
RLIMIT_FSIZE of one WAL segment instead (inherited by its shadow's server), so loading the shadow's largest table
fails with EFBIG where a full disk gives ENOSPC. The output says which was used."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import threading
import time

from advisor.bench.faults.base import Fault
from advisor.bench.faults.cases import MEASURED, next_line, stop_advisor
from advisor.bench.faults.env import TRIAL, Lines, measured
from connectors import factory

DISK_WORDS = ("no space left", "file too large", "disk full", "disk is full")


def _disk_reason(text: str) -> str | None:
    """The part of ``text`` that names a full disk (with a little context), None when nothing does."""
    low = text.lower()
    at = min((low.find(w) for w in DISK_WORDS if w in low), default=-1)
    return None if at < 0 else text[max(0, at - 100):at + 60].strip()


class DiskFull(Fault):
    name = "disk_full"
    title = "the shadow's disk fills up during a run"
    TMPFS_MB = 256

    def setup(self, env) -> None:
        self.disk = env.work / "disk"
        self.disk.mkdir(exist_ok=True)
        try:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.TMPFS_MB}m,mode=1777", "tmpfs",
                                   str(self.disk)], capture_output=True, text=True, timeout=30)
            ok, self.mount_error = done.returncode == 0, (done.stderr or done.stdout).strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            ok, self.mount_error = False, f"mount: {e}"
        self.method = "tmpfs" if ok else "rlimit"
        self.extra_dirs = (self.disk,)
        self.outcome.details["method"] = self.method

    def inject(self, env) -> None:
        self.lines = Lines()
        args = ("tune", "knobs", "--target", env.dsn, "--store", str(env.store_path), "--no-validate", "--optimizer",
                "random", "--trials", "10", "--seeds", "0", "--repeats", "2")
        if self.method == "rlimit":
            self._limit_files(env, args)
            return
        self.proc = env.advisor(*args, lines=self.lines, tmpdir=self.disk)
        self.alive = lambda: self.proc.poll() is None
        self.lines.wait(r"trial 1/", alive=self.alive)
        self.ballast = self.disk / "ballast"
        self.filling, self.stop_filling = threading.Event(), threading.Event()
        self.filler = threading.Thread(target=self._fill, daemon=True)
        self.filler.start()
        self.filling.wait(120)
        self.injected(f"the advisor's TMPDIR (where its shadow lives) is a {self.TMPFS_MB} MB tmpfs mounted by the "
                      f"bench; after trial 1 a ballast file filled it ({self.ballast.stat().st_size >> 20} MB) and "
                      f"kept it full (it takes every page freed) until the bench freed it")
        self.filled_at = time.monotonic()
        self.fill_index = len(self.lines.items) - 1

    def _limit_files(self, env, args) -> None:
        """No filesystem can be mounted here: the advisor (and so its shadow's server) runs with RLIMIT_FSIZE of
        one WAL segment (which must fit), below the orders table, so loading the shadow cannot grow that table's
        file (EFBIG, where a full disk gives ENOSPC)."""
        table = factory.connector(env.dsn).bench().table_bytes("orders")
        limit = 16 << 20  # exactly one WAL segment, which must fit
        if table <= limit:
            self.outcome.details["not_injected"] = f"orders ({table >> 20} MB) fits under the file size limit"
            return
        self.proc = env.advisor(*args, lines=self.lines,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
        self.alive = lambda: self.proc.poll() is None
        self.injected(f"no small filesystem can be mounted here ({self.mount_error[:60]}); the advisor ran with "
                      f"RLIMIT_FSIZE = {limit >> 20} MB (its shadow inherits it): the {table / 2**20:.1f} MB orders "
                      f"table cannot be loaded into the shadow (EFBIG, where a full disk gives ENOSPC)")
        self.filled_at = time.monotonic()
        self.fill_index = -1

    def detect(self, env) -> None:
        if not self.outcome.injected:
            return
        hit = None
        for _ in range(20):
            hit = next_line(self.lines, hit[0] if hit else self.fill_index, TRIAL.pattern, self.alive)
            if hit is None or not measured(hit[2].group(4)):
                break
        if hit is None:
            self.proc.wait(300)
            error = next((t for _, t in reversed(self.lines.items) if t.startswith("error:")), self.lines.tail(1))
            self.fail_index = len(self.lines.items) - 1
            self.outcome.details["error"] = error
            message, _, log = error.partition("; last log lines:")
            named, in_log = _disk_reason(message), _disk_reason(log)
            self.detected(named is not None, f"the run stopped (exit {self.proc.returncode}): "
                          + (f"...{named}..." if named else f"{message[:110]}" + (
                              f"; the disk is named only in the quoted server log: ...{in_log[-90:]}" if in_log
                              else "")))
            return
        self.fail_index, _, m = hit
        reason = m.group(4)
        named = _disk_reason(reason)
        self.detected(not measured(reason) and named is not None,
                      f"trial {m.group(1)} recorded as {reason[:60]} ...{named or reason[60:180]}")

    def recover(self, env) -> None:
        if not self.outcome.injected:
            return
        self._free()
        freed_at = time.monotonic()
        hit = next_line(self.lines, self.fail_index, MEASURED, self.alive) if self.proc.poll() is None else None
        rc = self.proc.wait(600)
        if hit is not None and rc == 0:
            _, t, m = hit
            self.recovered(True, f"space freed (ballast removed); trial {m.group(1)} measured {t - freed_at:.1f} s "
                                 f"later; the run ended done", t - freed_at)
            return
        # the run stopped: free space, then continue it
        run_id = self.lines.wait(r"tuning run (\w+):", timeout_s=1)[2].group(1)
        lines = Lines()
        self.proc = env.advisor("tune", "knobs", "--target", env.dsn, "--store", str(env.store_path),
                                "--no-validate", "--resume", run_id, lines=lines, tmpdir=self.disk
                                if self.method == "tmpfs" else env.tmp)
        rc = self.proc.wait(600)
        with env.store() as store:
            state = store.run(run_id)["state"]
            trials = len(store.trials(run_id))
        error = next((t for _, t in reversed(lines.items) if t.startswith("error:")), "")
        self.recovered(rc == 0 and state == "done",
                       f"after the bench freed the space, `--resume {run_id}` ended {state} (exit {rc}) with {trials} "
                       f"trials" + (f": {error[:150]}" if error else ""), time.monotonic() - freed_at)

    def _fill(self) -> None:
        """Write the ballast until the filesystem is full, then keep taking any page that gets free, until
        ``_free``."""
        page = b"\0" * 4096
        try:
            fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:
            self.filling.set()
            raise
        try:
            while not self.stop_filling.is_set():
                try:
                    os.write(fd, page if self.filling.is_set() else page * 256)
                except OSError as e:
                    if e.errno not in (errno.ENOSPC, errno.EFBIG):
                        raise
                    self.filling.set()
                    self.stop_filling.wait(0.005)
        finally:
            self.filling.set()
            os.close(fd)

    def _free(self) -> None:
        if self.method == "tmpfs":
            if getattr(self, "filler", None) is not None:
                self.stop_filling.set()
                self.filler.join(30)
            if getattr(self, "ballast", None) is not None:
                self.ballast.unlink(missing_ok=True)

    def teardown(self, env) -> None:
        self._free()
        stop_advisor(getattr(self, "proc", None))
        if self.method == "tmpfs":
            left = {pid: s for pid, s in env.shadows().items() if self.disk in s.root.parents}
            if left:
                self.orphaned(s.root for s in left.values())
                self.outcome.details["orphans_cleaned_by"] = env.clean_orphans((self.disk,))
            subprocess.run(["umount", str(self.disk)], capture_output=True)
