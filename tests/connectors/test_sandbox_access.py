"""Every sandbox the advisor starts admits only the advisor (issue 42, item 3): another local OS user is refused
over TCP and over the socket, with no password and with a wrong one, on both engines, while the advisor still
connects; the server's password is random, kept in a 0600 file of the advisor's in the sandbox's directory, and
never on the command line of a program the advisor runs (argv is world-readable through /proc), a shadow's
copy included."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import uuid

import pytest

from connectors import factory, local

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs clients as another OS user (runuser), needs root")

WRONG = "not-the-password-0"


def _as_nobody(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """``argv`` run as the OS user ``nobody``, with ``env`` added to a clean environment."""
    clean = {"PATH": "/usr/bin:/bin", "HOME": "/", **env}
    return subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, env=clean,
                          timeout=60)


def _refused(done: subprocess.CompletedProcess) -> None:
    assert done.returncode != 0, f"got in: {done.stdout!r}"
    assert "1" not in done.stdout.split(), done.stdout


def _postgres_attempts(pg) -> list[tuple[list[str], dict[str, str]]]:
    psql = pg.tool("psql")
    tcp = f"host=127.0.0.1 port={pg.port} user=postgres dbname=postgres"
    sock = f"host={pg.run_dir} port={pg.port} user=postgres dbname=postgres"
    out = []
    for conninfo in (tcp, sock):
        argv = [psql, "-X", "-A", "-t", "-w", conninfo, "-c", "SELECT 1"]
        out += [(argv, {}), (argv, {"PGPASSWORD": WRONG})]
    return out


def _mariadb_attempts(maria) -> list[tuple[list[str], dict[str, str]]]:
    client = maria.tool("mariadb")
    tcp = ["--protocol=TCP", "-h", "127.0.0.1", "-P", str(maria.port)]
    sock = ["--protocol=SOCKET", f"--socket={maria.socket}"]
    out = []
    for where in (tcp, sock):
        for user in ("advisor", "root"):
            argv = [client, "--no-defaults", *where, "-u", user, "-N", "-e", "SELECT 1"]
            out += [(argv, {}), (argv, {"MYSQL_PWD": WRONG})]
    return out


ENGINES = {"postgres": ("pg", _postgres_attempts), "mariadb": ("maria", _mariadb_attempts)}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_another_os_user_is_refused_and_the_advisor_gets_in(engine, request):
    fixture, attempts = ENGINES[engine]
    sandbox = request.getfixturevalue(fixture)
    for argv, env in attempts(sandbox):
        _refused(_as_nobody(argv, **env))
    # knowing the port and the login is not enough even for our own uid: the password is what lets one in
    for argv, env in attempts(sandbox)[:2]:
        _refused(subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env},
                                timeout=60))
    with factory.connector(sandbox.dsn()).session() as session:
        session.run("SELECT 1")


@pytest.mark.parametrize("engine", list(ENGINES))
def test_the_password_is_random_in_a_0600_file_of_the_advisors(engine, request):
    sandbox = request.getfixturevalue(ENGINES[engine][0])
    path = sandbox.root / local.SECRET_FILE
    mode = os.stat(path)
    assert stat.S_IMODE(mode.st_mode) == 0o600 and mode.st_uid == os.geteuid()
    assert local.read_secret(sandbox.root) == sandbox.password and len(sandbox.password) >= 32
    assert sandbox.password in sandbox.dsn() and sandbox.password not in factory.redact(sandbox.dsn())
    found = local.find_server(sandbox.root)  # a server found from its directory (the fault benches) gets in too
    assert found is not None
    with factory.connector(found.dsn).session() as session:
        session.run("SELECT 1")


def _spy(monkeypatch) -> list[list[str]]:
    """Every command line the advisor starts a program with (subprocess.run and Popen, still run for real)."""
    seen: list[list[str]] = []
    real_run, real_popen = subprocess.run, subprocess.Popen

    def run(args, *a, **kw):
        seen.append([str(x) for x in args])
        return real_run(args, *a, **kw)

    class Popen(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, args, *a, **kw):
            seen.append([str(x) for x in args])
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    return seen


@pytest.mark.parametrize("engine", list(ENGINES))
def test_no_password_is_on_a_command_line_of_a_shadow_or_a_client_program(engine, request, monkeypatch):
    sandbox = request.getfixturevalue(ENGINES[engine][0])
    name = "acc_" + uuid.uuid4().hex[:8]
    dsn = sandbox.create_database(name)
    target = factory.connector(dsn)
    target.loader().run_script(["CREATE TABLE t (id int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 2), (3, 4)"])
    seen = _spy(monkeypatch)
    with factory.clone(target) as shadow:
        secrets = {sandbox.password, shadow.sandbox.password}
        with shadow.connector.session() as session:
            session.run("SELECT v FROM t WHERE id = 3")
        tool = "psql" if engine == "postgres" else "mariadb"
        argv, env = shadow.connector.loader().client_command(tool, ["-e" if engine == "mariadb" else "-c", "SELECT 1"])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    programs = {os.path.basename(arg) for a in seen for arg in a}
    assert {"pg_dump", "pg_restore", "initdb"} <= programs or {"mariadb-dump", "mariadb", "mariadbd"} <= programs
    leaked = [a for a in seen if any(s in arg for s in secrets for arg in a)]
    assert not leaked, "a password on a command line"
