"""A DuckDB store shared by the processes of one user: the process that holds the file answers the others.

DuckDB lets one process open a file read-write, and while it does, no other process may open it at all, not even
read-only (measured with DuckDB 1.5.5: ``read_only=True`` fails with "Conflicting lock is held"). So whichever
process opens the file (``advisor serve``, or any command: a long ``advisor tune``, ``rewrite``, the demo) answers
every ``Store`` method, reads and changes alike, to the other processes of the same user (``StoreServer``, in
``advisor.storage.holder``: a Unix socket in Linux's abstract namespace named after the store's path; a peer of another user is refused by its
``SO_PEERCRED``, and a client never asks a holder of another user). A change runs in the holder under the store's
``lock``, serialized with the holder's own. ``open_store`` gives a process that finds the file locked a
``RemoteStore``, which forwards each call; when the holder exits while the client still works (no holder answers,
or it closes before it answers), the client takes over (``reach``): it opens the file itself, and answers the
others from then on, or finds the new holder, retrying for up to ``TAKEOVER_S`` seconds before one line that
names the holder (one line is said after 3 s of waiting). ``advisor serve`` is no exception: started while a
command holds the store, it serves through that command and takes the store over when it ends. DuckDB's own lock
message never reaches a user. What cannot cross processes (``db``, a live session) is refused in one line; the
services never need it. The server keeps no store alive (a store dropped unclosed frees its file, as before), and
a request is at most ``wire.MAX_REQUEST`` bytes (refused in one line by the client before it is sent).

A holder stopping (``Store.close``) first stops taking requests and lets those it took finish, so a client whose
request was taken always gets its answer; only a holder killed mid-request leaves a change's fate unknown, which
the client says rather than repeating the change.

A check-then-change (starting a run unless one is going on, merging into a recommendation's ``applied``) is one
``Store`` method (``advisor.storage.atomic``), so a forwarded one runs whole under the holder's lock.

The protocol, one JSON line each way per connection (``advisor.storage.wire``): the holder greets
``{"ready": pid}``; the client asks ``{"method", "args", "kwargs"}``; the holder answers ``{"value"}``,
``{"error": [type, message]}``, or ``{"gone": true}`` (closed before doing it: the client takes over). The hello
(``{"method": "hello"}``) says the holder's pid, web URL, store path, store schema and advisor version; a client
of another version refuses to ask it, in one line naming both. A greeting or answer the client cannot read is the
holder gone (before the request was sent) or one line.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

from advisor.core import errors, processes
from advisor.core.errors import StoreError, StoreLocked
from advisor.storage import wire
from advisor.storage.holder import StoreServer
from advisor.storage.wire import ANSWER_S, GREET_S, MAX_REQUEST, READS, address, forwardable

__all__ = ["READS", "RemoteStore", "StoreServer", "address", "forwardable", "reach"]

# keyword arguments that record the calling process: a forwarded call gives the client's, not the holder's
_CALLER = {"add_run": "owner", "add_run_unless_active": "owner"}
TAKEOVER_S = 30.0  # how long a client looks for a holder (or for the file to be free) before it gives up


class _Gone(Exception):
    """No holder answered; ``sent``: the request had been taken (so a change may or may not have been made)."""

    def __init__(self, sent: bool):
        super().__init__()
        self.sent = sent


def _ask(path: str, method: str, args: tuple = (), kwargs: dict | None = None) -> Any:
    """One call answered by the holder of the store at ``path``; ``_Gone`` when none answers."""
    request = wire.dumps({"method": method, "args": wire.encode(list(args)), "kwargs": wire.encode(kwargs or {})})
    if len(request) > MAX_REQUEST:
        raise StoreError(f"{method} is too large to hand to the process holding the store {path} "
                         f"({len(request) >> 20} MiB; at most {MAX_REQUEST >> 20} MiB)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(GREET_S)
        try:
            sock.connect(address(path))
        except OSError:
            raise _Gone(sent=False) from None
        pid, uid = wire.peer(sock)
        if uid not in (os.getuid(), 0):  # a process of another user took the name: never read from or tell it
            raise StoreError(f"the process answering for the store {path} (pid {pid}) belongs to another user; "
                             "not asking it")
        try:
            greeting = wire.receive(sock)
            if not isinstance(greeting, dict) or "ready" not in greeting:  # closed, or not a holder's greeting
                raise _Gone(sent=False)
            sock.sendall(request)
        except (OSError, ValueError):
            raise _Gone(sent=False) from None
        sock.settimeout(ANSWER_S)
        try:
            answer = wire.receive(sock)
        except TimeoutError:
            may = "" if method in READS else "; it may still make the change: look before trying again"
            raise StoreError(f"the process holding the store {path} (pid {pid}) did not answer {method} within "
                             f"{ANSWER_S:g} s{may}") from None
        except OSError:
            answer = None
        except ValueError:
            answer = {}
    if answer is None:
        raise _Gone(sent=True)
    return _value(path, pid, method, answer)


def _value(path: str, pid: int, method: str, answer: Any) -> Any:
    """What the holder's ``answer`` says: the value, its error raised, ``_Gone`` (not done: it closed first)."""
    if isinstance(answer, dict) and answer.get("gone") is True:
        raise _Gone(sent=False)
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, list) and len(error) == 2 and all(isinstance(e, str) for e in error):
        kind, message = error
        found = getattr(errors, kind, None)
        if isinstance(found, type) and issubclass(found, errors.AdvisorError):
            try:
                raise found(message)
            except TypeError:  # an error class that takes more than a message
                pass
        raise StoreError(message)
    try:
        if not isinstance(answer, dict) or "value" not in answer:
            raise ValueError(answer)
        return wire.decode(answer["value"])
    except (ValueError, TypeError, KeyError):
        raise StoreError(f"the process holding the store {path} (pid {pid}) answered {method} with something "
                         "this process cannot read") from None


def _hello(path: str) -> dict | None:
    """Who holds the store at ``path`` (``{"pid", "url", "path", "schema", "advisor"}``), None when no holder
    answers. A holder of another store, or running another schema or advisor version, is refused in one line."""
    try:
        hello = _ask(path, "hello")
    except _Gone:
        return None
    if not isinstance(hello, dict) or hello.get("path") is None or \
            Path(hello["path"]).resolve() != Path(path).resolve():
        raise StoreError(f"the process answering for the store {path} serves another store; not asking it")
    ours = wire.versions()
    theirs = {k: hello.get(k, "unknown") for k in ours}
    if theirs != ours:
        raise StoreError(f"process {hello.get('pid')}, which holds the store {path}, runs advisor "
                         f"{theirs['advisor']} (store schema {theirs['schema']}), this one advisor {ours['advisor']} "
                         f"(store schema {ours['schema']}): run one version, or let that process end first")
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
