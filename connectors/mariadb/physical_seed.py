"""A MariaDB warm replica seeded by a physical copy of the target's server (``mariadb-backup``) instead of a dump.

``mariadb-backup`` reads the server's data files, so it can be had only where they are: the target runs on this
host (its ``@@datadir`` is readable here and is the working directory of the process its ``@@pid_file`` names),
its login holds what a backup needs (RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR, or ALL PRIVILEGES), and the
installed ``mariadb-backup`` is of the target's major version. ``blockers`` says, one line each with its fix,
what of that is missing (``connectors.mariadb.replica`` then seeds by the dump and says why), and also when the
target's whole server (the copy holds every database on it) would not fit in half the replica's volume. A partial
copy (``--databases``) is no way out: its data directory does not start without importing each table's tablespace.

``seed`` makes the copy on the replica's copy-on-write volume (``--backup``, then ``--prepare``), the target's login
in an option file of mode 0600 (never on a command line, nor in what is said), and progress said at least every
few seconds. The copy holds the target's whole server: it becomes the replica's data directory with the replica's
own logins only (the accounts its installed server had, set by a one-time ``--init-file``), and without the
target's other databases. The installed data directory stays until the copy's server answers, so a copy that
does not start leaves the replica as it was (the dump then seeds it). The GTID position the copy was taken at
(``xtrabackup_binlog_info``) is returned; replication starts from there as after a dump.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pymysql

from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say
from connectors import local
from connectors.base import tool_error
from connectors.mariadb.connection import connect, quote
from connectors.mariadb.replica_check import held_privileges, literal
from connectors.mariadb.sandbox import DEFAULT_DB, MariaDBSandbox
from connectors.mariadb.server_options import as_root, binary
from connectors.mariadb.shadow import DUMP_TIMEOUT_S, option_value

TOOL = "mariadb-backup"
NEEDED = ("RELOAD", "PROCESS", "LOCK TABLES", "BINLOG MONITOR")
ALIASES = {"BINLOG MONITOR": {"REPLICATION CLIENT"}}
SYSTEM_DBS = {"mysql", "information_schema", "performance_schema", "sys", DEFAULT_DB}
PRIVILEGE_TABLES = ("db", "tables_priv", "columns_priv", "procs_priv", "proxies_priv", "roles_mapping")
COPIED_INNODB = ("innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces", "innodb_checksum_algorithm")
HEARTBEAT_S = 4.0
STAMP = re.compile(r"^\[\d+\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # "[00] 2026-11-29 03:13:08 " before its lines


class SeedFailed(AdvisorError):
    """The physical copy could not be made or started; the replica is as it was before (seed it by the dump)."""


@dataclass(frozen=True)
class Source:
    """Where the target's files are, as its server says."""

    datadir: str


def _tool_version() -> str | None:
    """The installed mariadb-backup's server version (``"10.11"``), None when it is not installed."""
    try:
        out = subprocess.run([binary(TOOL), "--version"], capture_output=True, text=True, timeout=30)
    except (SandboxError, OSError, subprocess.TimeoutExpired):
        return None
    words = (out.stdout + out.stderr).split("server ", 1)[-1].split()
    return ".".join(words[0].split(".")[:2]) if words else None


def _same_server(datadir: str, pid_file: str) -> bool:
    """Whether ``datadir`` is the working directory of the live process ``pid_file`` names (mariadbd runs in its
    data directory): the files here are that server's, not another one's at the same path."""
    try:
        pid = int(Path(pid_file).read_text().split()[0])
        return os.path.samefile(f"/proc/{pid}/cwd", datadir)
    except (OSError, ValueError, IndexError):
        return False


SERVER_BYTES_SQL = "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.TABLES"


def blockers(dsn: str, room: int | None = None) -> tuple[list[tuple[str, str]], Source | None]:
    """(what keeps a physical copy from being made, the line that fixes it) each, and where the target's files are
    when nothing does; ``room``: the bytes of the replica's volume (the copy may take half of it). Read-only."""
    version = _tool_version()
    if version is None:
        return [(f"{TOOL} is not installed here", "apt-get install mariadb-backup  # Debian's package")], None
    with connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@hostname, @@datadir, @@pid_file, VERSION()")
        hostname, datadir, pid_file, server_version = cur.fetchone()
        user, name, host, held = held_privileges(cur)
        cur.execute(SERVER_BYTES_SQL)
        server_bytes = int(cur.fetchone()[0])
    missing: list[tuple[str, str]] = []
    if room is not None and server_bytes > room // 2:
        missing.append((f"the target's server holds {server_bytes / 2**20:.0f} MB in all its databases, more than "
                        f"half the replica's volume ({room / 2**20:.0f} MB) that {TOOL}'s copy of all of them needs",
                        "none needed: the dump copies only the database"))
    major = ".".join(str(server_version).split(".")[:2])
    if major != version:
        missing.append((f"the target runs MariaDB {major}; the {TOOL} here is {version}'s",
                        f"install the {TOOL} of MariaDB {major} on this host"))
    if str(hostname) != socket.gethostname():
        missing.append((f"the target runs on another host ({hostname}): {TOOL} reads its files",
                        "run the advisor on the target's host"))
    elif not os.access(datadir, os.R_OK | os.X_OK):
        missing.append((f"the target's data directory {datadir} is not readable here",
                        "run the advisor as root or as the target's OS user (mysql)"))
    elif not _same_server(str(datadir), str(pid_file)):
        missing.append((f"{datadir} here cannot be confirmed to be the target's data directory",
                        "run the advisor as root on the target's host (to read its server's process)"))
    if "ALL PRIVILEGES" not in held:
        lacking = [p for p in NEEDED if p not in held and not held & ALIASES.get(p, set())]
        if lacking:
            missing.append((f"the login {user} lacks {', '.join(lacking)} (for {TOOL})",
                            f"GRANT {', '.join(lacking)} ON *.* TO {literal(name)}@{literal(host)};  -- on the target"))
    if missing:
        return missing, None
    return [], Source(str(datadir))



def _run(args: list[str], log: Path, what: str, say: Say, watch: Path | None = None) -> None:
    """Run ``args`` with its output in ``log``; say what it does every ``HEARTBEAT_S`` (how much of ``watch`` it
    wrote); SeedFailed with its error line when it fails or runs past ``DUMP_TIMEOUT_S``."""
    started = last = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None:
                time.sleep(0.5)
                now = time.monotonic()
                if now - started > DUMP_TIMEOUT_S:
                    raise SeedFailed(f"{TOOL} did not end within {DUMP_TIMEOUT_S:.0f} s")
                if now - last >= HEARTBEAT_S:
                    last = now
                    copied = f", {local.bytes_under(watch) / 2**20:.0f} MB copied" if watch else ""
                    say(f"replica: {TOOL} {what} ({now - started:.0f} s{copied})")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if proc.returncode != 0:
        text = log.read_text(errors="replace")
        lines = [STAMP.sub("", ln) for ln in text.splitlines() if ln.strip()]
        errors = [ln for ln in lines if any(w in ln.lower() for w in ("error", "failed", "denied"))]
        said = tool_error(TOOL, errors[-1] if errors else lines[-1] if lines else "")
        raise SeedFailed(f"{TOOL} {what} failed: {said or f'exit {proc.returncode}'}")


def _backup_options(tmp: Path, params: dict) -> Path:
    """The target's login for mariadb-backup: an option file of mode 0600, the only one it reads."""
    path = tmp / "backup.cnf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"[client]\nuser={option_value(str(params['user']))}\n"
                f"password={option_value(str(params.get('password') or ''))}\n")
    return path


def _binlog_point(backup: Path) -> tuple[str, str, int]:
    """(GTID position, binary log file, position) the copy was taken at."""
    for name in ("mariadb_backup_binlog_info", "xtrabackup_binlog_info"):
        try:
            fields = (backup / name).read_text(encoding="utf-8").split("\t")
        except OSError:
            continue
        if len(fields) >= 2:
            return (fields[2].strip() if len(fields) > 2 else ""), fields[0].strip(), int(fields[1])
    raise SeedFailed(f"{TOOL} recorded no binary log position (is binary logging on at the target?)")


def _own_accounts(sandbox: MariaDBSandbox) -> list[str]:
    """The statements that give a copied server exactly the accounts of ``sandbox``'s installed one."""
    with sandbox._root_conn() as conn, conn.cursor() as cur:
        cur.execute("SELECT Host, User, Priv FROM mysql.global_priv")
        rows = [f"({conn.escape(h)}, {conn.escape(u)}, {conn.escape(p)})" for h, u, p in cur.fetchall()]
    return ([f"DELETE FROM mysql.{t};" for t in ("global_priv", *PRIVILEGE_TABLES)]
            + [f"INSERT INTO mysql.global_priv (Host, User, Priv) VALUES {', '.join(rows)};", "FLUSH PRIVILEGES;"])


def _chown_mysql(path: Path) -> None:
    if not as_root():
        return
    pw = pwd.getpwnam("mysql")
    os.lchown(path, pw.pw_uid, pw.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in (os.path.join(root, n) for n in dirs + files):
            os.lchown(name, pw.pw_uid, pw.pw_gid)


def _innodb_options(backup: Path) -> list[str]:
    """The InnoDB layout options the copy needs (``backup-my.cnf``), as option-file lines."""
    lines = (backup / "backup-my.cnf").read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip().split("=", 1)[0] in COPIED_INNODB]


def seed(sandbox: MariaDBSandbox, params: dict, source: Source, dbname: str, size: int, say: Say
         ) -> tuple[str, str, int]:
    """Make ``sandbox`` (running, installed) a physical copy of the target keeping only ``dbname``; the binary log
    point it was taken at (``_binlog_point``). SeedFailed when it cannot: ``sandbox`` then runs as before."""
    backup = sandbox.root / "backup"
    password = str(params.get("password") or "")
    try:
        with tempfile.TemporaryDirectory(prefix="backup-", dir=sandbox.root) as tmp:
            options = _backup_options(Path(tmp), params)
            where = (["--socket", params["unix_socket"]] if params.get("unix_socket")
                     else ["-h", params["host"], "-P", str(params["port"]), "--protocol=TCP"])
            say(f"replica: copying the target's files with {TOOL} ({size / 2**20:.0f} MB in its database)")
            _run([binary(TOOL), f"--defaults-file={options}", "--backup", f"--target-dir={backup}",
                  f"--datadir={source.datadir}", *where], Path(tmp) / "backup.log", "copying the target's files",
                 say, watch=backup)
            say(f"replica: {TOOL} --prepare (applying the redo log the copy took)")
            _run([binary(TOOL), "--prepare", f"--target-dir={backup}"], Path(tmp) / "prepare.log",
                 "preparing the copy", say)
        point = _binlog_point(backup)
        _swap_in(sandbox, backup, dbname, say)
        return point
    except SeedFailed as e:
        shutil.rmtree(backup, ignore_errors=True)
        raise SeedFailed(str(e).replace(password, "***") if password else str(e)) from None
    except (OSError, pymysql.Error, SandboxError) as e:
        shutil.rmtree(backup, ignore_errors=True)
        said = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise SeedFailed(f"the copy could not be used: {said.replace(password, '***') if password else said}") from None


def _wait_ready(sandbox: MariaDBSandbox, say: Say, timeout_s: float = 3600.0) -> None:
    """Until the copy's server answers (its crash recovery on a large copy takes a while), said every few seconds;
    SandboxError when it exits or ``timeout_s`` passed."""
    started = time.monotonic()
    while True:
        try:
            sandbox.wait_ready(HEARTBEAT_S)
            return
        except SandboxError:
            if sandbox._proc is None or sandbox._proc.poll() is not None or time.monotonic() - started > timeout_s:
                raise
        say(f"replica: the copy's server is starting ({time.monotonic() - started:.0f} s)")


def _swap_in(sandbox: MariaDBSandbox, backup: Path, dbname: str, say: Say) -> None:
    """The prepared copy ``backup`` becomes ``sandbox``'s data directory, started with its own accounts and only
    ``dbname`` of the target's databases; the installed one comes back when it does not start."""
    accounts = _own_accounts(sandbox)
    (backup / "xtrabackup_binlog_pos_innodb").unlink(missing_ok=True)
    layout = _innodb_options(backup)
    installed, options = sandbox.root / "data.installed", sandbox.options_file.read_text(encoding="utf-8")
    init = sandbox.run_dir / "seed-accounts.sql"
    try:
        sandbox._halt()
        os.rename(sandbox.data, installed)
        os.rename(backup, sandbox.data)
        _chown_mysql(sandbox.data)
        include = options.index("!include")
        sandbox.options_file.write_text(options[:include] + "".join(f"{ln}\n" for ln in layout) + options[include:],
                                        encoding="utf-8")
        fd = os.open(init, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(accounts) + "\n")
        _chown_mysql(init)
        say("replica: starting the replica on the copy")
        sandbox._proc = subprocess.Popen([sandbox.server, f"--defaults-file={sandbox.options_file}",
                                          f"--init-file={init}", "--skip-slave-start"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_ready(sandbox, say)
        init.unlink(missing_ok=True)
        with sandbox._root_conn() as conn, conn.cursor() as cur:
            cur.execute("SHOW DATABASES")
            for (name,) in cur.fetchall():
                if name not in SYSTEM_DBS and name != dbname:
                    say(f"replica: dropping the target's database {name} from the copy (it follows only {dbname})")
                    cur.execute(f"DROP DATABASE {quote(name)}")
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote(DEFAULT_DB)}")
            cur.execute("RESET SLAVE ALL")  # a target that is itself a replica: its link is not the copy's
    except BaseException:
        init.unlink(missing_ok=True)
        sandbox._halt(graceful=False)
        if installed.exists():  # the copy took the installed one's place
            shutil.rmtree(sandbox.data, ignore_errors=True)
            os.rename(installed, sandbox.data)
        sandbox.options_file.write_text(options, encoding="utf-8")
        sandbox._launch()
        sandbox.wait_ready(120.0)
        raise
    shutil.rmtree(installed, ignore_errors=True)
