"""A DuckDB store used by several processes at once (issue 44 item 1, ``advisor.storage.remote``): the process that
holds the file answers the others' calls, reads and changes alike; a client's calls come back as a local call
returns them; when the holder ends (or is killed) the client takes the file over and answers others in turn;
DuckDB's own lock message never reaches anyone. Real processes throughout: a small script holding the store
through ``open_store``, or the real CLI."""

from __future__ import annotations

import inspect
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.bench.playground import create_shop
from advisor.core.domain import KnobChange, Recommendation
from advisor.core.errors import Conflict, InvalidTransition, NotFound, StoreError
from advisor.storage import remote, wire
from advisor.storage.remote import RemoteStore
from advisor.storage.store import Store, open_store
from tests.advisor.storage.test_store import _rec
from tests.advisor.storage.test_store_postgres import _wait_for
from connectors.postgres.sandbox import free_port
from tests.advisor.cli.test_cli_service import cli, environ, ok, serving

# holds the store at argv[1] until the file argv[3] exists; then prints what it sees and exits (closing the store)
HOLDER = """
import json, pathlib, sys, time
from advisor.storage.store import Store, open_store
store = Store(sys.argv[1]) if sys.argv[4] == "raw" else open_store(sys.argv[1], remote=True)
ready = pathlib.Path(sys.argv[2])  # written whole, then renamed: the test never reads it half written
ready.with_suffix(".tmp").write_text(type(store).__name__)
ready.with_suffix(".tmp").replace(ready)
while not pathlib.Path(sys.argv[3]).exists():
    time.sleep(0.05)
print(json.dumps({"targets": sorted(t["name"] for t in store.targets()),
                  "runs": [[r["id"], r["owner"]["pid"]] for r in store.runs()],
                  "recommendations": [r.id for r in store.recommendations()],
                  "snapshots": sum(store.count_snapshots(t["id"]) for t in store.targets())}))
store.close()
"""
RAW_LOCK = ("Conflicting lock", "IO Error", "Could not set lock")


class Holder:
    def __init__(self, proc: subprocess.Popen, go: Path):
        self.proc, self.go = proc, go

    def finish(self) -> dict:
        """Let the holder print what it sees and exit."""
        self.go.touch()
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, err
        return json.loads(out)


@contextmanager
def holding(path: Path, tmp_path: Path, raw: bool = False):
    """Another process holding the store at ``path`` (``raw``: a bare ``Store``, which answers no one)."""
    ready, go = tmp_path / "holder.ready", tmp_path / "holder.go"
    ready.unlink(missing_ok=True)
    go.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(ready), str(go), "raw" if raw else "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: ready.exists() or proc.poll() is not None, "the holder to open the store")
        assert proc.poll() is None, proc.communicate()
        assert ready.read_text() == "Store"
        yield Holder(proc, go)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _reads(store) -> dict:
    """What a set of reads returns (to compare a forwarded call with a local one)."""
    (target,) = store.targets()
    return {"targets": store.targets(), "target": store.target("t1"), "runs": store.runs(), "run": store.run("run1"),
            "trials": store.trials("run1"), "recommendations": store.recommendations(),
            "recommendation": store.recommendation("r1"), "summaries": store.recommendation_summaries(),
            "audit": store.audit_log(), "identity": store.target_identity(target["id"]),
            "claim": store.current_claim("r1"), "schedules": store.schedules(), "tokens": store.tokens()}


def test_every_call_goes_through_the_holder_and_the_client_takes_over_when_it_ends(tmp_path):
    path = tmp_path / "s.duckdb"
    with holding(path, tmp_path) as holder:
        client = open_store(path, remote=True)
        assert isinstance(client, RemoteStore)
        tid = client.upsert_target("t1", "postgres", "postgresql://u@h/db")
        client.set_target_identity(tid, {"system": "x", "database": "db"})
        rec = Recommendation(**{**_rec().__dict__, "target_id": tid})
        assert client.add_recommendation(rec) is None
        assert client.recommendation("r1") == rec  # the dataclass whole: tuples, evidence, changes
        validated = client.transition("r1", "validated", "advisor")
        assert isinstance(validated, Recommendation) and validated.state == "validated"
        with pytest.raises(InvalidTransition):
            client.transition("r1", "applied", "bob")  # the holder's error, as its own type
        with pytest.raises(NotFound):
            client.recommendation("nope")
        client.add_run("run1", tid, "knobs", "rules", {"plan": {"kind": "knobs"}})
        assert client.run("run1")["owner"]["pid"] == os.getpid()  # the run is this process's, not the holder's
        trial = client.add_trial(tid, "run1", "rules", [KnobChange("work_mem", "64MB")], rec.evidence, "ok",
                                 objective=1.5, config={"work_mem": "64MB"}, statements={"q": 4.0})
        assert isinstance(trial, str)
        assert client.claim("r1", "validated", "c1") is True and client.current_claim("r1")[0] == "c1"
        client.release("r1", "c1")
        assert client.version >= 3
        with pytest.raises(StoreError, match="cannot be used from another process"):
            client.db  # noqa: B018 - a live session does not cross processes
        forwarded = _reads(client)

        seen = holder.finish()  # the holder sees every change, and exits
        assert seen == {"targets": ["t1"], "runs": [["run1", os.getpid()]], "recommendations": ["r1"],
                        "snapshots": 0}
        # the holder is gone: the next call opens the file here, and every read returns what it returned through
        # the holder (the same types and values as a local call)
        assert _reads(client) == forwarded
        assert client.db.execute("SELECT count(*) FROM trials").fetchone()[0] == 1  # the file itself now

        # and this process answers the next one
        third = subprocess.run([sys.executable, "-c", "import sys; from advisor.storage.store import open_store; "
                                "s = open_store(sys.argv[1], remote=True); s.upsert_target('t2', 'postgres', 'x'); "
                                "print(type(s).__name__, sorted(t['name'] for t in s.targets()))", str(path)],
                               capture_output=True, text=True, timeout=120)
        assert third.returncode == 0 and third.stdout.split() == ["RemoteStore", "['t1',", "'t2']"], third.stderr
        client.close()
    with Store(path) as s:
        assert sorted(t["name"] for t in s.targets()) == ["t1", "t2"]


def test_a_client_takes_the_store_over_when_its_holder_is_killed(tmp_path):
    path = tmp_path / "s.duckdb"
    with holding(path, tmp_path) as holder:
        client = open_store(path, remote=True)
        client.upsert_target("t1", "postgres", "x")
        holder.proc.kill()  # kill -9: no goodbye
        holder.proc.wait()
        client.upsert_target("t2", "postgres", "x")  # no holder answers: this process opens the file
        assert sorted(t["name"] for t in client.targets()) == ["t1", "t2"]
        assert client.db is not None
        client.close()


def test_a_holder_that_answers_no_one_is_waited_for_with_a_line_said(tmp_path):
    """A process that holds the file without answering (a bare ``Store``: a library user, or an advisor of
    before) is waited for, with one line said, and the file taken when it ends."""
    path = tmp_path / "s.duckdb"
    with holding(path, tmp_path, raw=True) as holder:
        said = []

        def say(line: str) -> None:
            said.append(line)
            holder.go.touch()  # told to wait: now let the holder end

        store = open_store(path, remote=True, say=say)
        assert isinstance(store, Store)
        assert len(said) == 1 and f"process {holder.proc.pid}" in said[0], said
        assert not any(raw in said[0] for raw in RAW_LOCK)
        store.close()


def test_a_command_that_ends_without_closing_answers_what_it_took_and_hands_the_store_over(tmp_path):
    """A command holding the store ends (no ``close``: its process exits) while another writes to it call after
    call: every write is made exactly once, and the writer holds the store afterwards."""
    path, ready = tmp_path / "s.duckdb", tmp_path / "ready"
    ends = subprocess.Popen([sys.executable, "-c", "import pathlib, sys, time; from advisor.storage.store import "
                             "open_store; s = open_store(sys.argv[1], remote=True); s.upsert_target('t0', "
                             "'postgres', 'x'); pathlib.Path(sys.argv[2]).write_text('ok'); time.sleep(1)",
                             str(path), str(ready)], stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: ready.exists() or ends.poll() is not None, "the holder to open the store")
        client = open_store(path, remote=True)
        assert isinstance(client, RemoteStore)
        (target,) = client.targets()
        client.add_run("run1", target["id"], "knobs", "rules", {})
        written, after = 0, 0
        while after < 20:  # call after call, until 20 went after the holder had ended
            gone = ends.poll() is not None
            client.add_trial(target["id"], "run1", "rules", [], None, "ok", number=written)
            written, after = written + 1, after + gone
        assert ends.returncode == 0, ends.stderr.read()
    finally:
        if ends.poll() is None:
            ends.kill()
        ends.communicate()
    assert [t["number"] for t in client.trials("run1")] == list(range(written))  # each once, none lost
    assert client.db is not None  # the file is this process's now
    client.close()


# holds the store at argv[1] and its lock until a request of another process waits for that lock; prints the
# targets seen then (under the lock) and after the lock is let go
UNDER_LOCK = """
import json, pathlib, sys, time
from advisor.storage.store import open_store
store = open_store(sys.argv[1], remote=True)
with store.lock:
    pathlib.Path(sys.argv[2]).write_text("locked")
    while store.server._active == 0:
        time.sleep(0.05)
    inside = [t["name"] for t in store.targets()]
while not store.targets():
    time.sleep(0.05)
print(json.dumps({"inside": inside, "after": [t["name"] for t in store.targets()]}))
store.close()
"""


def test_a_change_waits_for_the_holders_lock(tmp_path):
    """A change asked of the holder while one of its own read-check-write sequences holds the store's lock waits
    for it (the client's socket timeout is longer than any such sequence), then is made: never in the middle."""
    path, ready = tmp_path / "s.duckdb", tmp_path / "locked"
    proc = subprocess.Popen([sys.executable, "-c", UNDER_LOCK, str(path), str(ready)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: ready.exists() or proc.poll() is not None, "the holder to take its lock")
        client = open_store(path, remote=True)
        client.upsert_target("t1", "postgres", "x")  # answered once the holder lets its lock go
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out) == {"inside": [], "after": ["t1"]}


def _api(port: int, secret: str, route: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{route}", headers={"Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def test_serve_starts_while_another_process_holds_the_store_and_takes_it_over(tmp_path):
    """``advisor serve`` started while a command holds the store (the demo, a long tune) serves through it, and
    holds the store itself once that command ends; the CLI then asks the server."""
    path = tmp_path / "advisor.duckdb"
    with holding(path, tmp_path) as holder:
        secret = ok(cli(tmp_path, "tokens", "create", "--name", "me", "--role", "viewer", "--json"))["secret"]
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port), "--no-scheduler"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ(tmp_path))
        try:
            serving(proc, port)
            assert _api(port, secret, "/api/runs")["items"] == []  # the token the holder stored lets us in
            assert holder.finish()["targets"] == []  # the holder ends; the server takes the store over
            assert _api(port, secret, "/api/runs")["items"] == []
            assert [t["name"] for t in ok(cli(tmp_path, "tokens", "list", "--json"))["tokens"]] == ["me"]
        finally:
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err and not any(raw in err for raw in RAW_LOCK), err
    with Store(path) as s:  # the server let it go
        assert [t["name"] for t in s.tokens()] == ["me"]


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "holder_shop")


def test_commands_at_once_while_another_holds_the_store(tmp_path, shop):
    """While a script holds the store, two CLI commands run at the same time (an observe that registers and
    stores, a list); then one CLI holds it (an observe waiting for its workload) while another observes: all
    succeed, the holder sees what they stored, and no DuckDB lock message is printed."""
    store = tmp_path / "advisor.duckdb"
    with holding(store, tmp_path) as holder:
        results = {}

        def run(name, *args):
            results[name] = cli(tmp_path, *args)

        threads = [threading.Thread(target=run, args=("observe", "observe", "--target", shop, "--register", "shop",
                                                      "--json")),
                   threading.Thread(target=run, args=("list", "runs", "list", "--json"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert ok(results["observe"])["snapshot_id"] and ok(results["list"])["runs"] == []
        seen = holder.finish()
        assert seen["targets"] == ["shop"] and seen["snapshots"] >= 1  # registering observes too

    # a CLI holds the store while it waits for the workload; another observes meanwhile
    first = subprocess.Popen([sys.executable, "-m", "advisor", "observe", "--target", "shop", "--interval", "3",
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=environ(tmp_path))
    waiting = []
    for line in first.stderr:
        waiting.append(line)
        if "waiting" in line:
            break
    second = cli(tmp_path, "observe", "--target", "shop", "--json")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, "".join(waiting) + err
    assert ok(second)["snapshot_id"] and json.loads(out)["snapshot_id"]
    for text in [second.stderr, err, *waiting]:
        assert not any(raw in text for raw in RAW_LOCK), text
    with Store(store) as s:
        (target,) = s.targets()
        assert s.count_snapshots(target["id"]) == seen["snapshots"] + 2


def test_a_store_dropped_unclosed_stops_answering_and_lets_the_file_go(tmp_path):
    """Answering others keeps no store alive: one dropped without ``close`` frees its file, as it did before."""
    import gc

    path = tmp_path / "s.duckdb"
    store = open_store(path)
    store.upsert_target("t1", "postgres", "x")
    del store
    gc.collect()
    other = subprocess.run([sys.executable, "-c", "import sys; from advisor.storage.store import Store; "
                            "print(type(Store(sys.argv[1])).__name__)", str(path)],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and other.stdout.strip() == "Store", other.stderr


# --- the holder's protocol, one store call at a time (issue 44 item 1, review) --------------------------------


def _client(path: Path) -> RemoteStore:
    """A client of the holder of ``path`` in this process (the holder answers on its socket all the same)."""
    hello = remote._hello(str(path))
    assert hello is not None
    return RemoteStore(str(path), hello, Store, lambda: Store(path).serve())


def _raw(path: Path, line: bytes) -> dict | None:
    """Send one raw line to the holder of ``path``, after its greeting; its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(wire.address(str(path)))
        assert "ready" in wire.receive(sock)
        sock.sendall(line)
        return wire.receive(sock)


@contextmanager
def fake_holder(path: Path, *answers):
    """Something answering on the holder's socket of ``path``: for each connection in turn, its (greeting, answer)
    lines; then it stops listening."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(wire.address(str(path)))
    listener.listen(8)

    def serve():
        for i, (greeting, answer) in enumerate(answers):
            conn, _ = listener.accept()
            if i == len(answers) - 1:
                listener.close()
            with conn:
                conn.sendall(greeting)
                if wire.receive(conn) is not None:  # a client that refused the greeting asks nothing
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(timeout=60)
        listener.close()


def test_starting_a_run_checks_and_records_in_one_call_of_the_holder(tmp_path):
    """Two processes starting a run on one database: the check for a run going on and the insert are one store
    call, done under the holder's lock, so the second is refused (as the service's Conflict), and two merges into
    a recommendation's applied record both stay."""
    path = tmp_path / "s.duckdb"
    holder = open_store(path)
    try:
        one, two = _client(path), _client(path)
        tid = one.upsert_target("t1", "postgres", "x")
        one.add_run_unless_active("run1", tid, "knobs", "rules", {}, active=("queued", "running"))
        with pytest.raises(Conflict, match=r"target t1 already has tuning run run1 \(queued\)"):
            two.add_run_unless_active("run2", tid, "knobs", "rules", {}, active=("queued", "running"))
        assert [r["id"] for r in holder.runs()] == ["run1"]
        assert holder.run("run1")["owner"]["pid"] == os.getpid()
        holder.add_recommendation(Recommendation(**{**_rec().__dict__, "target_id": tid}))
        one.merge_applied("r1", {"watch": {"state": "watching"}})
        two.merge_applied("r1", {"reverted": True})
        assert holder.recommendation("r1").applied == {"watch": {"state": "watching"}, "reverted": True}
    finally:
        holder.close()


def test_a_class_outside_the_wire_table_is_refused_and_nothing_is_imported(tmp_path):
    """A value tagged with a class that is not one of ``wire.CLASSES`` (here the CLI's entry point, which would
    run a command when imported) is refused in one line; no module is imported from a name on the wire."""
    assert "advisor.__main__" not in sys.modules
    path = tmp_path / "s.duckdb"
    holder = open_store(path)
    try:
        request = {"method": "targets", "args": [{"__dataclass__": "advisor.__main__:run", "fields": {}}],
                   "kwargs": {}}
        answer = _raw(path, wire.dumps(request))
        kind, message = answer["error"]
        assert kind == "StoreError" and "\n" not in message
        assert "'advisor.__main__:run' is not a class that travels between advisor processes" in message
        assert "advisor.__main__" not in sys.modules
        with pytest.raises(ValueError, match="is not a class"):
            wire.decode({"__dataclass__": "os:system", "fields": {}})
    finally:
        holder.close()


def test_every_read_only_store_method_is_a_read_and_no_writer_is():
    """``READS`` (answered without the lock, asked again when the holder went away) lists exactly the forwardable
    Store methods and properties that do not write: a writer is decorated ``changes_lists`` or runs INSERT,
    UPDATE or DELETE."""
    writes = re.compile(r"@changes_lists|\b(INSERT|UPDATE|DELETE)\b")
    found = {}
    for name in dir(Store):
        if wire.forwardable(Store, name):
            member = inspect.getattr_static(Store, name)
            found[name] = not writes.search(inspect.getsource(member.fget if isinstance(member, property)
                                                              else member))
    assert "ids_starting" in found and found["add_run_unless_active"] is False
    assert {n for n, reads in found.items() if reads} == set(wire.READS)


def test_a_request_that_is_not_an_object_is_answered_with_one_line(tmp_path):
    """A JSON request that is not an object (a list) gets one error line, and the holder goes on answering; a
    greeting that is not a holder's is no holder at all (the client takes the file)."""
    path = tmp_path / "s.duckdb"
    holder = open_store(path)
    try:
        assert _raw(path, b"[]\n") == {"error": ["StoreError", "a request to the process holding the store must be "
                                                               "a JSON object"]}
        assert _raw(path, wire.dumps({"method": "targets", "args": {}, "kwargs": []}))["error"][0] == "StoreError"
        assert _client(path).targets() == []
    finally:
        holder.close()
    other = tmp_path / "o.duckdb"
    with fake_holder(other, (b"[1, 2]\n", b"\n")):
        assert remote._hello(str(other)) is None
    with fake_holder(other, (b'{"ready": 1}\n', b'{"valu": 3}\n')):
        with pytest.raises(StoreError, match="answered hello with something this process cannot read"):
            remote._hello(str(other))


def test_a_holder_closed_before_doing_a_change_hands_the_store_over(tmp_path):
    """'Closed in the process that held it' means not done: the client takes the store over and makes the change
    itself, rather than stopping on an error."""
    path = tmp_path / "s.duckdb"
    with fake_holder(path, (b'{"ready": 1}\n', b'{"gone": true}\n')):
        client = RemoteStore(str(path), {"pid": 1}, Store, lambda: Store(path).serve())
        client.upsert_target("t1", "postgres", "x")
    try:
        assert client._local is not None and [t["name"] for t in client.targets()] == ["t1"]
    finally:
        client.close()


def test_a_holder_of_another_version_is_refused_in_one_line(tmp_path):
    """The hello says the holder's store schema and advisor version; a client of another refuses it, naming both."""
    path = tmp_path / "s.duckdb"
    hello = {"value": {"pid": 7, "url": None, "path": str(path.resolve()), "schema": 1, "advisor": "0.0.1"}}
    ours = wire.versions()
    with fake_holder(path, (b'{"ready": 7}\n', wire.dumps(hello))):
        with pytest.raises(StoreError) as e:
            remote._hello(str(path))
    assert "\n" not in e.value.message
    assert (f"runs advisor 0.0.1 (store schema 1), this one advisor {ours['advisor']} (store schema "
            f"{ours['schema']})") in e.value.message
