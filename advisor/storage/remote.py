"""A DuckDB store shared by the processes of one user: the process that holds the file answers the others.

DuckDB lets one process open a file read-write, and while it does, no other process may open it at all, not even
read-only (measured with DuckDB 1.5.5: ``read_only=True`` fails with "Conflicting lock is held"). So whichever
process opens the file (``advisor serve``, or any command: a long ``advisor tune``, ``rewrite``, the demo) answers
every ``Store`` method, reads and changes alike, to the other processes of the same user (``StoreServer``: a Unix
socket in Linux's abstract namespace named after the store's path; a peer of another user is refused by its
``SO_PEERCRED``, and a client never asks a holder of another user). A change runs in the holder under the store's
``lock``, serialized with the holder's own. ``open_store`` gives a process that finds the file locked a
``RemoteStore``, which forwards each call; when the holder exits while the client still works (no holder answers,
or it closes before it answers), the client takes over (``reach``): it opens the file itself, and answers the
others from then on, or finds the new holder, retrying for up to ``TAKEOVER_S`` seconds before one line that
names the holder (one line is said after 3 s of waiting). ``advisor serve`` is no exception: started while a
command holds the store, it serves through that command and takes the store over when it ends. DuckDB's own lock
message never reaches a user. What cannot cross processes (``db``, a live session) is refused in one line; the
services never need it. The server keeps no store alive (a store dropped unclosed frees its file, as before), and
a request is at most ``_MAX_REQUEST`` bytes (refused in one line by the client before it is sent).

A holder stopping (``Store.close``) first stops taking requests and lets those it took finish, so a client whose
request was taken always gets its answer; only a holder killed mid-request leaves a change's fate unknown, which
the client says rather than repeating the change.

The protocol, one JSON line each way per connection (``advisor.storage.wire``): the holder greets
``{"ready": pid}``; the client asks ``{"method", "args", "kwargs"}``; the holder answers ``{"value"}`` or
``{"error": [type, message]}``.
"""

from __future__ import annotations

import inspect
import os
import socket
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable

from advisor.core import errors, processes
from advisor.core.errors import StoreError, StoreLocked
from advisor.storage import wire
from advisor.storage.wire import address

__all__ = ["READS", "RemoteStore", "StoreServer", "address", "forwardable", "reach"]

# the Store methods and properties that only read: a holder answers them without its lock, and a client asks one
# again when its holder went away before answering
READS = frozenset({
    "version", "schema_version", "snapshots", "count_snapshots", "trials", "run", "runs", "count_runs",
    "cached_seeds", "recommendations", "recommendation_summaries", "count_recommendations", "recommendation",
    "audit_log", "targets", "target", "target_by_id", "target_with_identity", "target_identity", "tokens", "token",
    "token_by_id", "token_by_hash", "session", "schedules", "schedule", "current_claim", "replica", "replicas",
    "targets_of_database",
    # a target's credentials as stored, encrypted: only this user's processes (which hold the key file) are asked
    "target_credentials"})
# what cannot cross processes: a live session, the process's own lock, the store's life
LIVE = frozenset({"db", "lock", "close", "serve", "server"})
# keyword arguments that record the calling process: a forwarded call gives the client's, not the holder's
_CALLER = {"add_run": "owner"}
TAKEOVER_S = 30.0  # how long a client looks for a holder (or for the file to be free) before it gives up
ANSWER_S = 600.0  # how long a client waits for an answer: longer than any write the holder serializes it behind
_GREET_S = 30.0  # how long a holder may take to greet (a busy one, on shared cores)
_MAX_REQUEST = 64 << 20  # bytes: a request carries at most a snapshot's workload


def forwardable(cls: type, name: str) -> bool:
    """Whether ``name`` of the store class ``cls`` is a method or property another process may call."""
    if name.startswith("_") or name in LIVE:
        return False
    found = inspect.getattr_static(cls, name, None)
    return isinstance(found, property) or inspect.isfunction(found)


class StoreServer:
    """Answers other processes' calls of ``store`` while this process holds it (``start``, ``stop``). ``url``:
    where this process's web UI and REST API listen, if it is ``advisor serve`` (said in error lines). It keeps
    no store alive: a store dropped unclosed stops answering, as its file closes; at this process's exit it stops
    as at ``close``."""

    def __init__(self, store, url: str | None = None):
        self._store, self.path, self.url = weakref.ref(store), store.path, url
        self._sock: socket.socket | None = None
        self._busy = threading.Condition()
        self._active, self._stopped = 0, False
        self._threads: set[threading.Thread] = set()  # the accept loop and the answering threads, joined at stop
        self.taken = False  # another process answers for this store's name (see ``start``)

    def start(self) -> "StoreServer":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(address(self.path))
        except OSError:  # the name is taken: no process of ours can hold the file too, so it is not ours
            sock.close()
            self.taken = True  # a client refuses a holder of another user (``_ask``)
            return self
        sock.listen(64)
        self._sock = sock
        # when the store is dropped, or at this process's exit (a command ends without closing it): stop, letting
        # the requests taken be answered first
        weakref.finalize(self._store(), self.stop)
        self._spawn(self._accept, "advisor-store-server")
        return self

    def _spawn(self, target, name: str, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._busy:
            self._threads = {t for t in self._threads if t.is_alive()} | {thread}
        thread.start()

    def stop(self, wait_s: float = 60.0) -> None:
        """Take no more requests, and wait (up to ``wait_s``) for those taken to be answered."""
        with self._busy:
            self._stopped = True
        if self._sock is not None:
            _shut(self._sock)
        with self._busy:
            self._busy.wait_for(lambda: self._active == 0, timeout=wait_s)
            threads = set(self._threads)
        # and for their threads to end: one that ends frees its database session, which must not outlive the
        # store (at this process's exit, DuckDB aborts on a session freed while the interpreter finalizes)
        for t in threads:
            if t is not threading.current_thread():
                t.join(timeout=5.0)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._spawn(self._answer, "advisor-store-answer", conn)

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            if wire.peer(conn)[1] not in (os.getuid(), 0):
                return  # another user's process: the store is this user's
            with self._busy:
                if self._stopped:
                    return  # closed without a greeting: the client looks for the next holder
                self._active += 1
            try:
                conn.settimeout(_GREET_S)
                wire.send(conn, {"ready": os.getpid()})
                request = wire.receive(conn, _MAX_REQUEST)
                if request is not None:
                    conn.settimeout(ANSWER_S)
                    wire.send(conn, self._do(request))
            except (OSError, ValueError):
                return
            finally:
                with self._busy:
                    self._active -= 1
                    self._busy.notify_all()

    def _do(self, request: dict) -> dict:
        method = request.get("method")
        if method == "hello":
            return {"value": {"pid": os.getpid(), "url": self.url, "path": str(Path(self.path).resolve())}}
        store = self._store()
        if store is None:
            return {"error": ["StoreError", f"the store {self.path} was closed in the process that held it"]}
        if not isinstance(method, str) or not forwardable(type(store), method):
            return {"error": ["StoreError", f"{method!r} is not a method of the store another process may call"]}
        try:
            args, kwargs = wire.decode(request.get("args", [])), wire.decode(request.get("kwargs", {}))
            if method in READS:
                value = _call(store, method, args, kwargs)
            else:
                with store.lock:  # serialized with this process's own read-check-write sequences
                    value = _call(store, method, args, kwargs)
            return {"value": wire.encode(value)}
        except errors.AdvisorError as e:
            return {"error": [type(e).__name__, e.message]}
        except Exception as e:  # noqa: BLE001 - the client gets one line, never the holder's traceback
            return {"error": ["StoreError", f"the process holding the store could not do {method} "
                                            f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"]}



def _call(store, method: str, args: list, kwargs: dict) -> Any:
    found = getattr(store, method)
    return found(*args, **kwargs) if callable(found) else found


def _shut(sock: socket.socket) -> None:
    """Stop listening (the accept loop ends): the store it answered for is gone."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class _Gone(Exception):
    """No holder answered; ``sent``: the request had been taken (so a change may or may not have been made)."""

    def __init__(self, sent: bool):
        super().__init__()
        self.sent = sent


def _ask(path: str, method: str, args: tuple = (), kwargs: dict | None = None) -> Any:
    """One call answered by the holder of the store at ``path``; ``_Gone`` when none answers."""
    request = wire.dumps({"method": method, "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs or {})})
    if len(request) > _MAX_REQUEST:
        raise StoreError(f"{method} is too large to hand to the process holding the store {path} "
                         f"({len(request) >> 20} MiB; at most {_MAX_REQUEST >> 20} MiB)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(_GREET_S)
        try:
            sock.connect(address(path))
        except OSError:
            raise _Gone(sent=False) from None
        pid, uid = wire.peer(sock)
        if uid not in (os.getuid(), 0):  # a process of another user took the name: never read from or tell it
            raise StoreError(f"the process answering for the store {path} (pid {pid}) belongs to another user; "
                             "not asking it")
        try:
            if wire.receive(sock) is None:
                raise _Gone(sent=False)
            sock.sendall(request)
        except OSError:
            raise _Gone(sent=False) from None
        sock.settimeout(ANSWER_S)
        try:
            answer = wire.receive(sock)
        except TimeoutError:
            raise StoreError(f"the process holding the store {path} (pid {pid}) did not answer {method} within "
                             f"{ANSWER_S:g} s") from None
        except OSError:
            answer = None
    if answer is None:
        raise _Gone(sent=True)
    if "error" in answer:
        kind, message = answer["error"]
        error = getattr(errors, kind, None)
        if isinstance(error, type) and issubclass(error, errors.AdvisorError):
            try:
                raise error(message)
            except TypeError:  # an error class that takes more than a message
                pass
        raise StoreError(message)
    return wire.decode(answer["value"])


def _hello(path: str) -> dict | None:
    """Who holds the store at ``path`` (``{"pid", "url", "path"}``), None when no holder answers."""
    try:
        hello = _ask(path, "hello")
    except _Gone:
        return None
    if not isinstance(hello, dict) or hello.get("path") is None or \
            Path(hello["path"]).resolve() != Path(path).resolve():
        raise StoreError(f"the process answering for the store {path} serves another store; not asking it")
    return hello


def reach(path: str, opener: Callable[[], Any], say: Callable[[str], None] | None = None,
          holder: int | None = None) -> tuple[Any, dict | None]:
    """(the store, None) when this process could open the file (``opener``), else (None, its holder's hello).
    Retries while the file is held by a process that does not answer (one starting, or one stopping) for up to
    ``TAKEOVER_S`` seconds, then one line that names that process."""
    deadline, told = time.monotonic() + TAKEOVER_S, False
    while True:
        try:
            return opener(), None
        except StoreLocked as e:
            holder = e.pid or holder
        hello = _hello(path)
        if hello is not None:
            return None, hello
        who = f"process {holder}" if holder else "another process"
        if time.monotonic() > deadline:
            raise StoreError(f"the store {path} is held by {who}, which does not answer other advisor processes "
                             f"(waited {TAKEOVER_S:g} s): let it finish or stop it, or keep the store on PostgreSQL "
                             "(ADVISOR_STORE=postgresql://...), which any number of processes share")
        if not told and say is not None and time.monotonic() > deadline - TAKEOVER_S + 3:
            say(f"waiting for {who}, which holds the store {path}, to answer or to end")
            told = True
        time.sleep(0.2)


class RemoteStore:
    """The store another process holds (``holder``: its hello, ``{"pid", "url", "path"}``), every call forwarded to
    it (``StoreServer``); when that process ends, this one takes over (``reach``: it opens the file itself, or
    follows the new holder). ``like``: the store class whose methods are forwarded; ``opener``: opens the file in
    this process (raising ``StoreLocked``)."""

    shared = False  # the store's files are beside the holder's path, as a holder's are

    def __init__(self, path: str, holder: dict, like: type, opener: Callable[[], Any],
                 say: Callable[[str], None] | None = None):
        self.path, self.holder, self._like, self._opener, self._say = path, holder, like, opener, say
        self._local = None  # the store itself, once this process took it over
        self._url: str | None = None  # this process's web UI, said to others once it holds the store (``serve``)
        self._switch = threading.Lock()
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """Serializes this process's read-check-write sequences: once it holds the store, the store's own lock,
        which the calls it answers for others take too."""
        return self._local.lock if self._local is not None else self._lock

    @property
    def version(self) -> int:
        return self._call("version", (), {})

    @property
    def schema_version(self) -> int:
        return self._call("schema_version", (), {})

    @property
    def db(self):
        if self._local is not None:
            return self._local.db
        raise StoreError(f"the store {self.path} is held by process {self.holder.get('pid')}: a live database "
                         "session cannot be used from another process")

    def _call(self, name: str, args: tuple, kwargs: dict) -> Any:
        if name in _CALLER and kwargs.get(_CALLER[name]) is None:
            kwargs = {**kwargs, _CALLER[name]: processes.this_process()}
        for attempt in range(6):  # a holder gone, then the next one gone too: enough to follow a few
            local = self._local
            if local is not None:
                found = getattr(local, name)
                return found(*args, **kwargs) if callable(found) else found
            if attempt == 5:
                break
            try:
                return _ask(self.path, name, args, kwargs)
            except _Gone as gone:
                if gone.sent and name not in READS:
                    raise StoreError(f"process {self.holder.get('pid')}, which held the store {self.path}, ended "
                                     f"while doing {name} for this one; whether it was stored is unknown: look, "
                                     "then try again") from None
                self._take_over()
        raise StoreError(f"the store {self.path} changed hands five times during one call ({name}); try again")

    def _take_over(self) -> None:
        with self._switch:
            if self._local is not None:
                return
            store, hello = reach(self.path, self._opener, self._say, self.holder.get("pid"))
            if store is not None:
                self._local = store.serve(self._url)
                if self._say is not None:
                    self._say(f"process {self.holder.get('pid')} ended; this process holds the store now")
            else:
                self.holder = hello

    def serve(self, url: str | None = None) -> "RemoteStore":
        """``url``: where this process's web UI listens, said to the others once it holds the store."""
        self._url = url
        if self._local is not None:
            self._local.serve(url)
        return self

    def close(self) -> None:
        """Close the store if this process took it over; else nothing to close (each call is its own
        connection)."""
        if self._local is not None:
            self._local.close()

    def __enter__(self) -> "RemoteStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str):
        if forwardable(self.__dict__.get("_like") or object, name):
            return lambda *args, **kwargs: self._call(name, args, kwargs)
        raise AttributeError(name)
