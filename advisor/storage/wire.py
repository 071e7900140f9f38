"""The wire between the process that holds a DuckDB store (``advisor.storage.holder``) and the other processes of
its user (``advisor.storage.remote``): which ``Store`` methods may be asked (``forwardable``) and which only read
(``READS``), the limits both sides keep, the versions a holder's hello says (``versions``), an abstract Unix socket
named after the store's path, the peer's user read from the socket (``SO_PEERCRED``), one JSON line per message, and the values of ``Store`` calls tagged so that they arrive
as the types a local call takes and returns: dataclasses (``Recommendation``, ``Snapshot``, ``Evidence``, changes)
by their class, named from a fixed table (``CLASSES``: the dataclasses of ``advisor.core.domain`` and
``advisor.core.measured``; a request naming another is refused, and nothing is imported from a name on the wire),
tuples as tuples, dicts with keys that are not text as pairs; NaN and infinities stay floats.

>>> from advisor.core.domain import KnobChange
>>> value = [KnobChange("work_mem", "64MB"), ("a", 1.5), {1: float("nan")}, {"k": None}]
>>> back = decode(json.loads(json.dumps(encode(value))))
>>> back[:2] == value[:2], type(back[0]), type(back[1]), list(back[2]), back[2][1] != back[2][1], back[3]
(True, <class 'advisor.core.domain.KnobChange'>, <class 'tuple'>, [1], True, {'k': None})
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import inspect
import json
import numbers
import socket
import struct
from pathlib import Path
from typing import Any

from advisor.core import domain, measured
from advisor.storage.schema import SCHEMA_VERSION

__all__ = ["ANSWER_S", "CLASSES", "GREET_S", "LIVE", "MAX_REQUEST", "READS", "address", "decode", "dumps", "encode",
           "forwardable", "peer", "receive", "send", "versions"]

_DATACLASS, _TUPLE, _PAIRS = "__dataclass__", "__tuple__", "__pairs__"
_TAGS = frozenset({_DATACLASS, _TUPLE, _PAIRS})
# the only classes a value on the wire may be: what the Store's methods take and return
CLASSES = {f"{cls.__module__}:{cls.__qualname__}": cls for module in (domain, measured)
           for cls in vars(module).values()
           if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__}


# the Store methods and properties that only read: a holder answers them without its lock, and a client asks one
# again when its holder went away before answering (tests/advisor/storage/test_store_holder.py checks it against Store's
# methods: a method that writes is one decorated ``changes_lists`` or running INSERT, UPDATE or DELETE)
READS = frozenset({
    "version", "schema_version", "snapshots", "count_snapshots", "trials", "run", "runs", "count_runs",
    "cached_seeds", "recommendations", "recommendation_summaries", "count_recommendations", "recommendation",
    "audit_log", "targets", "target", "target_by_id", "target_with_identity", "target_identity", "tokens", "token",
    "token_by_id", "token_by_hash", "session", "schedules", "schedule", "current_claim", "replica", "replicas",
    "targets_of_database", "ids_starting", "location",
    # a target's credentials as stored, encrypted: only this user's processes (which hold the key file) are asked
    "target_credentials"})
# what cannot cross processes: a live session, the process's own lock, the store's life
LIVE = frozenset({"db", "lock", "close", "serve", "server"})
ANSWER_S = 600.0  # how long a client waits for an answer: longer than any write the holder serializes it behind
GREET_S = 30.0  # how long a holder may take to greet (a busy one, on shared cores)
MAX_REQUEST = 64 << 20  # bytes: a request carries at most a snapshot's workload


def forwardable(cls: type, name: str) -> bool:
    """Whether ``name`` of the store class ``cls`` is a method or property another process may call."""
    if name.startswith("_") or name in LIVE:
        return False
    found = inspect.getattr_static(cls, name, None)
    return isinstance(found, property) or inspect.isfunction(found)


def address(path: str) -> str:
    """The abstract socket name of the holder of the store at ``path`` (its absolute path's hash)."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return f"\0db-advisor-store-{digest}"


def versions() -> dict:
    """What a holder's hello says it runs (the store schema it writes, and the advisor's version): a client
    running another refuses to ask it, rather than have the holder misread its calls."""
    try:
        package = importlib.metadata.version("db-advisor")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        package = "unknown"
    return {"schema": SCHEMA_VERSION, "advisor": package}


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data that ``decode`` turns back into an equal value of the same types;
    ``TypeError`` for what cannot travel (a live object)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, numbers.Integral):  # numpy's integers
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if CLASSES.get(f"{cls.__module__}:{cls.__qualname__}") is not cls:
            raise TypeError(f"a {cls.__name__} cannot be sent to another process")
        return {_DATACLASS: f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {_TUPLE: [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not _TAGS & value.keys():
            return {k: encode(v) for k, v in value.items()}
        return {_PAIRS: [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} cannot be sent to another process")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if _DATACLASS in value:
        fields = value.get("fields")
        return _dataclass(value[_DATACLASS], {k: decode(v) for k, v in fields.items()}
                          if isinstance(fields, dict) else None)
    if _TUPLE in value:
        return tuple(decode(v) for v in value[_TUPLE])
    if _PAIRS in value:
        return {_hashable(decode(k)): decode(v) for k, v in value[_PAIRS]}
    return {k: decode(v) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def _dataclass(name: Any, fields: Any) -> Any:
    """The dataclass ``name`` (``module:QualName``, one of ``CLASSES``) built from its fields."""
    cls = CLASSES.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(fields, dict):
        raise ValueError(f"{str(name)[:80]!r} is not a class that travels between advisor processes")
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    obj = cls(**{k: v for k, v in fields.items() if k in init})
    for k, v in fields.items():
        if k not in init:
            object.__setattr__(obj, k, v)
    return obj


def dumps(doc: dict) -> bytes:
    """One message as it goes on the wire (a JSON line)."""
    return json.dumps(doc).encode() + b"\n"


def send(sock: socket.socket, doc: dict) -> None:
    sock.sendall(dumps(doc))


def receive(sock: socket.socket, limit: int | None = None) -> dict | None:
    """One message; None when the peer closed the connection before a whole one; ``ValueError`` past ``limit``
    bytes."""
    chunks, size = [], 0
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise ValueError(f"a message of more than {limit} bytes")
        if chunk.endswith(b"\n"):
            return json.loads(b"".join(chunks))


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    return pid, uid
