"""The wire between the process that holds a DuckDB store and the other processes of its user
(``advisor.storage.remote``): an abstract Unix socket named after the store's path, the peer's user read from the
socket (``SO_PEERCRED``), one JSON line per message, and the values of ``Store`` calls tagged so that they arrive
as the types a local call takes and returns: dataclasses (``Recommendation``, ``Snapshot``, ``Evidence``, changes)
by their class, tuples as tuples, dicts with keys that are not text as pairs; NaN and infinities stay floats.

>>> from advisor.core.domain import KnobChange
>>> value = [KnobChange("work_mem", "64MB"), ("a", 1.5), {1: float("nan")}, {"k": None}]
>>> back = decode(json.loads(json.dumps(encode(value))))
>>> back[:2] == value[:2], type(back[0]), type(back[1]), list(back[2]), back[2][1] != back[2][1], back[3]
(True, <class 'advisor.core.domain.KnobChange'>, <class 'tuple'>, [1], True, {'k': None})
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import numbers
import socket
import struct
from pathlib import Path
from typing import Any

__all__ = ["address", "decode", "dumps", "encode", "peer", "receive", "send"]

_DATACLASS, _TUPLE, _PAIRS = "__dataclass__", "__tuple__", "__pairs__"
_TAGS = frozenset({_DATACLASS, _TUPLE, _PAIRS})


def address(path: str) -> str:
    """The abstract socket name of the holder of the store at ``path`` (its absolute path's hash)."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return f"\0db-advisor-store-{digest}"


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
        return _dataclass(value[_DATACLASS], {k: decode(v) for k, v in value["fields"].items()})
    if _TUPLE in value:
        return tuple(decode(v) for v in value[_TUPLE])
    if _PAIRS in value:
        return {_hashable(decode(k)): decode(v) for k, v in value[_PAIRS]}
    return {k: decode(v) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def _dataclass(name: str, fields: dict) -> Any:
    """The dataclass ``name`` (``module:QualName``, only of this project's packages) built from its fields."""
    module, _, qualname = name.partition(":")
    if not module.split(".")[0] in ("advisor", "connectors", "optimizers", "workloads"):
        raise ValueError(f"{name!r} is not a class of db-advisor")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"{name!r} is not a dataclass")
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
