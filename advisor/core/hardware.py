"""What the tuned server runs on. Memory-derived knob sizes must be the target server's, so ``for_target`` picks
each part (memory, cores, storage) from the first source that knows it:

1. given for this run (``advisor tune knobs --memory-gb/--cores``),
2. given by the user and stored with the target (``advisor targets add --memory-gb/--cpus``),
3. read from the server itself (the connector's ``hardware()``: /proc/meminfo through SQL on PostgreSQL),
4. this machine (``detect``), only as a labelled fallback: right for a local server, and said out loud otherwise.

What the user gives wins over what the server reports (a container's /proc shows its host's memory, not its own
limit). ``Hardware.source`` names where the memory came from: ``given``, ``server`` or ``detected``.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.domain import Hardware

GB = 1024**3
PARTS = ("memory_bytes", "cores", "storage")


def detect(data_path: str | None = None) -> Hardware:
    """This machine's memory (bytes), cores and storage kind (rotational disks are 'hdd')."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Hardware(memory_bytes=int(memory), cores=os.cpu_count() or 1, storage=_storage(), source="detected")


def _storage() -> str:
    flags = [p.read_text().strip() for p in Path("/sys/block").glob("*/queue/rotational") if not
             p.parts[3].startswith(("loop", "ram", "zram"))]
    return "hdd" if flags and all(f == "1" for f in flags) else "ssd"


def given(memory_gb: float | None = None, cores: int | None = None, storage: str | None = None) -> dict:
    """What a user said about a server, as the parts ``for_target`` takes (missing parts left out).

    >>> given(2, None, "ssd")
    {'memory_bytes': 2147483648, 'storage': 'ssd'}
    """
    parts = {"memory_bytes": int(memory_gb * GB) if memory_gb else None, "cores": cores, "storage": storage}
    return {k: v for k, v in parts.items() if v is not None}


def resolve(memory_gb: float | None = None, cores: int | None = None, storage: str | None = None) -> Hardware | None:
    """The hardware a user gave on the command line, the parts not given taken from this machine; None when
    nothing was given (then the target's own hardware is looked up: ``for_target``)."""
    parts = given(memory_gb, cores, storage)
    if not parts:
        return None
    hw = detect()
    return Hardware(memory_bytes=parts.get("memory_bytes", hw.memory_bytes), cores=parts.get("cores", hw.cores),
                    storage=parts.get("storage", hw.storage), source="given")


def describe(hw: Hardware) -> str:
    """``16 GB RAM, 4 cores, ssd``."""
    return f"{hw.memory_bytes / GB:.3g} GB RAM, {hw.cores} core{'s' if hw.cores != 1 else ''}, {hw.storage}"


def for_target(run: dict | None = None, stored: dict | None = None, server: Hardware | None = None,
               here: Hardware | None = None) -> tuple[Hardware, list[str]]:
    """The target's hardware, part by part from the first source that knows it (see the module docstring), and
    notes on where each came from; a part only this machine gave is called out as such.

    >>> hw, notes = for_target(None, {"memory_bytes": 2 * GB}, None, Hardware(64 * GB, 32, "ssd"))
    >>> hw.memory_bytes == 2 * GB, hw.cores, hw.source
    (True, 32, 'given')
    >>> notes[0], notes[-1][:77]
    ('memory: stored with the target', 'cores, storage: unknown for the target (not given, not readable on its server')
    >>> for_target(None, None, Hardware(8 * GB, 4, "ssd", "server"), Hardware(64 * GB, 32, "ssd"))[0].source
    'server'
    """
    sources = [("given for this run", dict(run or {})), ("stored with the target", dict(stored or {})),
               ("read from the server", _parts(server) if server is not None else {})]
    chosen: dict = {}
    origin: dict[str, str] = {}
    for label, parts in sources:
        for part in PARTS:
            if part not in chosen and parts.get(part) is not None:
                chosen[part], origin[part] = parts[part], label
    missing = [p for p in PARTS if p not in chosen]
    notes = []
    for label in dict.fromkeys(origin.values()):
        names = [_NAMES[p] for p in PARTS if origin.get(p) == label]
        notes.append(f"{', '.join(names)}: {label}")
    if missing:
        local = here or detect()
        for p in missing:
            chosen[p] = getattr(local, p)
        shown = {"memory_bytes": f"{local.memory_bytes / GB:.3g} GB", "cores": f"{local.cores} cores",
                 "storage": local.storage}
        notes.append(f"{', '.join(_NAMES[p] for p in missing)}: unknown for the target (not given, not readable on "
                     f"its server): this machine's are used ({', '.join(shown[p] for p in missing)}); give them with "
                     "`advisor targets add ... --memory-gb N --cpus N`")
    memory_from = origin.get("memory_bytes", "")
    source = "given" if memory_from.startswith(("given", "stored")) else "server" if memory_from else "detected"
    return Hardware(int(chosen["memory_bytes"]), int(chosen["cores"]), str(chosen["storage"]), source), notes


_NAMES = {"memory_bytes": "memory", "cores": "cores", "storage": "storage"}


def _parts(hw: Hardware) -> dict:
    """The parts a server reported (a storage kind it could not tell is left out)."""
    return {p: getattr(hw, p) for p in PARTS if getattr(hw, p) not in (None, "unknown")}
