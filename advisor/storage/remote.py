"""Reading a DuckDB store that a running ``advisor serve`` holds.

DuckDB lets one process open a file read-write, and while it does, no other process may open it at all, not even
read-only (measured with DuckDB 1.5.5: ``read_only=True`` fails with "Conflicting lock is held"; several read-only
processes may share a file only while no process holds it read-write). So the process that holds the store (the
server) answers the read methods of its ``Store`` to other processes of the same user (``StoreServer``: a Unix
socket in Linux's abstract namespace named after the store's path; a peer of another user is refused by its
``SO_PEERCRED``), and ``open_store`` gives a process that finds the file locked a ``RemoteStore``: the same read
methods, one request each; a change raises ``StoreInUse``, one line that names the server and the way to go on.

The protocol is one JSON line each way: ``{"method", "args", "kwargs"}`` -> ``{"value"}`` or ``{"error": [type,
message]}``; recommendations travel as ``{"__recommendation__": plain(rec)}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from advisor.core import errors
from advisor.core.domain import Recommendation
from advisor.core.errors import StoreError, StoreInUse
from advisor.storage import codec

__all__ = ["READS", "RemoteStore", "StoreServer", "address"]

# the Store methods and properties that only read (never the credentials: a reader does not need them)
READS = frozenset({
    "version", "schema_version", "snapshots", "count_snapshots", "trials", "run", "runs", "count_runs",
    "cached_seeds", "recommendations", "recommendation_summaries", "count_recommendations", "recommendation",
    "audit_log", "targets", "target", "target_by_id", "target_with_identity", "target_identity", "tokens", "token",
    "token_by_id", "schedules", "schedule", "current_claim", "replica", "replicas",
    # a target's credentials as stored, encrypted: ``--target NAME`` needs them, and only this user's processes
    # (which hold the key file) are answered
    "target_credentials"})
_REC = "__recommendation__"
_TIMEOUT_S = 60.0
_MAX_REQUEST = 1 << 20  # bytes: a read's request is a method name and a few arguments


def address(path: str) -> str:
    """The abstract socket name of the server of the store at ``path`` (its absolute path's hash)."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return f"\0db-advisor-store-{digest}"


def _encode(value: Any) -> Any:
    if isinstance(value, Recommendation):
        return {_REC: codec.plain(value)}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return codec.plain(value)


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and _REC in value:
        return codec.recommendation_from(value[_REC])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _send(sock: socket.socket, doc: dict) -> None:
    sock.sendall(json.dumps(doc, default=str).encode() + b"\n")


def _receive(sock: socket.socket, limit: int | None = None) -> dict | None:
    chunks, size = [], 0
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return json.loads(b"".join(chunks)) if chunks else None
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise ValueError(f"a request of more than {limit} bytes")
        if chunk.endswith(b"\n"):
            return json.loads(b"".join(chunks))


def _peer_uid(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    return pid, uid


class StoreServer:
    """Answers other processes' reads of ``store`` while this process holds it (``start``, ``stop``). ``url``:
    where the server's web UI and REST API listen, said to a process that asks for a change."""

    def __init__(self, store, url: str | None = None):
        self.store, self.url = store, url
        self._sock: socket.socket | None = None
        self._stopped = threading.Event()
        self.taken = False  # another process answers for this store's name (see ``start``)

    def start(self) -> "StoreServer":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(address(self.store.path))
        except OSError:  # the name is taken: no process of ours can hold the file too, so it is not ours
            sock.close()
            self.taken = True  # the CLI refuses a server of another user (``_ask``); reads wait for this one
            return self
        sock.listen(16)
        self._sock = sock
        threading.Thread(target=self._accept, name="advisor-store-server", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(_TIMEOUT_S)
            if _peer_uid(conn)[1] not in (os.getuid(), 0):
                return  # another user's process: the store is this user's
            try:
                request = _receive(conn, _MAX_REQUEST)
                if request is not None:
                    _send(conn, self._do(request))
            except (OSError, ValueError):
                return

    def _do(self, request: dict) -> dict:
        method = request.get("method")
        if method == "hello":
            return {"value": {"pid": os.getpid(), "url": self.url, "path": self.store.path}}
        if method not in READS:
            return {"error": ["StoreInUse", f"{method!r} is not a read of the store"]}
        try:
            found = getattr(self.store, method)
            value = found(*request.get("args", []), **request.get("kwargs", {})) if callable(found) else found
            return {"value": _encode(value)}
        except errors.AdvisorError as e:
            return {"error": [type(e).__name__, e.message]}
        except Exception as e:  # noqa: BLE001 - the reader gets one line, never the server's traceback
            return {"error": ["StoreError", f"the server could not read the store ({type(e).__name__}: {e})"]}


def _ask(path: str, method: str, args: tuple = (), kwargs: dict | None = None) -> Any:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(_TIMEOUT_S)
        sock.connect(address(path))
        pid, uid = _peer_uid(sock)
        if uid not in (os.getuid(), 0):  # a process of another user took the name: never read from or tell it
            raise StoreError(f"the process answering for the store {path} (pid {pid}) belongs to another user; "
                             "not asking it")
        _send(sock, {"method": method, "args": list(args), "kwargs": kwargs or {}})
        answer = _receive(sock)
    if answer is None:
        raise StoreError(f"the server holding the store {path} closed the connection without an answer")
    if "error" in answer:
        kind, message = answer["error"]
        error = getattr(errors, kind, None)
        raise (error if isinstance(error, type) and issubclass(error, errors.AdvisorError)
               and kind not in ("StoreLocked",) else StoreError)(message)
    return _decode(answer["value"])


class RemoteStore:
    """The store that a running server holds, read through it: ``READS`` answered by the server, every other
    ``Store`` method raises ``StoreInUse`` (one line: the server's pid and URL, and how to proceed)."""

    read_only = True
    shared = False

    def __init__(self, path: str, server: dict, like: type):
        self.path, self.server, self._like = path, server, like
        self.lock = threading.RLock()

    @classmethod
    def find(cls, path: str, like: type) -> "RemoteStore | None":
        """The store at ``path`` read through the server holding it, None when no server answers for it.
        ``like``: the store class whose other methods are changes (refused)."""
        try:
            hello = _ask(path, "hello")
        except (OSError, ValueError):
            return None
        if not isinstance(hello, dict) or hello.get("path") is None or \
                Path(hello["path"]).resolve() != Path(path).resolve():
            raise StoreError(f"the process answering for the store {path} serves another store; not asking it")
        return cls(path, hello, like)

    def in_use(self) -> StoreInUse:
        url = self.server.get("url")
        where = f"the web UI / REST API at {url}" if url else "the web UI / REST API of that server"
        return StoreInUse(f"the store {self.path} is in use by `advisor serve` (pid {self.server.get('pid')}); "
                          f"stop it to change things from the command line, or use {where}")

    @property
    def version(self) -> int:
        return self._read("version")

    @property
    def schema_version(self) -> int:
        return self._read("schema_version")

    @property
    def db(self):
        raise self.in_use()

    def _read(self, method: str, *args, **kwargs) -> Any:
        try:
            return _ask(self.path, method, args, kwargs)
        except StoreInUse:
            raise self.in_use() from None
        except (OSError, ValueError) as e:
            raise StoreError(f"cannot read the store {self.path} through `advisor serve` (pid "
                             f"{self.server.get('pid')}): {getattr(e, 'strerror', None) or e}") from None

    def close(self) -> None:
        """Nothing to close: each read is its own connection."""

    def __enter__(self) -> "RemoteStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str):
        if name in READS:
            return lambda *args, **kwargs: self._read(name, *args, **kwargs)
        if not name.startswith("_") and callable(getattr(self.__dict__.get("_like"), name, None)):
            def refused(*_args, **_kwargs):
                raise self.in_use()

            return refused
        raise AttributeError(name)
