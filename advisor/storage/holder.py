"""The process that holds a DuckDB store answering the other processes of its user (``StoreServer``): a Unix socket
in Linux's abstract namespace named after the store's path (``advisor.storage.wire``), a peer of another user
refused by its ``SO_PEERCRED``. A change runs under the store's ``lock``, serialized with the holder's own; a read
(``wire.READS``) without it. Stopping (``stop``) first stops taking requests and lets those taken be answered; a
request arriving after the store was dropped is answered ``{"gone": true}`` (not done: the client takes over). A
request that is not a JSON object, or names a class outside ``wire.CLASSES``, is refused in one line. The client
side, and the protocol, are in ``advisor.storage.remote``.
"""

from __future__ import annotations

import os
import socket
import threading
import weakref
from pathlib import Path
from typing import Any

from advisor.core import errors
from advisor.storage import wire
from advisor.storage.wire import ANSWER_S, GREET_S, MAX_REQUEST, READS, address, forwardable

__all__ = ["StoreServer"]


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
                conn.settimeout(GREET_S)
                wire.send(conn, {"ready": os.getpid()})
                request = wire.receive(conn, MAX_REQUEST)
                if request is not None:
                    conn.settimeout(ANSWER_S)
                    wire.send(conn, self._answer_to(request))
            except (OSError, ValueError):  # a request that is not JSON, or too large: the client's side says so
                return
            finally:
                with self._busy:
                    self._active -= 1
                    self._busy.notify_all()

    def _answer_to(self, request: Any) -> dict:
        if not isinstance(request, dict):
            return {"error": ["StoreError", "a request to the process holding the store must be a JSON object"]}
        try:
            return self._do(request)
        except Exception as e:  # noqa: BLE001 - the client gets one line, never the holder's traceback
            return {"error": ["StoreError", f"the process holding the store could not read the request "
                                            f"({type(e).__name__})"]}

    def _do(self, request: dict) -> dict:
        method = request.get("method")
        if method == "hello":
            return {"value": {"pid": os.getpid(), "url": self.url, "path": str(Path(self.path).resolve()),
                              **wire.versions()}}
        store = self._store()
        if store is None:  # closed here before doing it: the client looks for the next holder, or takes over
            return {"gone": True}
        if not isinstance(method, str) or not forwardable(type(store), method):
            return {"error": ["StoreError", f"{method!r} is not a method of the store another process may call"]}
        try:
            args, kwargs = wire.decode(request.get("args", [])), wire.decode(request.get("kwargs", {}))
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ValueError("arguments that are not a list and an object")
        except ValueError as e:
            return {"error": ["StoreError", f"{method}: {e}"]}
        try:
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
