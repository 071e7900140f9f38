"""What the tuned server runs on: detected for a local server, given by the user otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.domain import Hardware


def detect(data_path: str | None = None) -> Hardware:
    """This machine's memory (bytes), cores and storage kind (rotational disks are 'hdd')."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Hardware(memory_bytes=int(memory), cores=os.cpu_count() or 1, storage=_storage(), source="detected")


def _storage() -> str:
    flags = [p.read_text().strip() for p in Path("/sys/block").glob("*/queue/rotational") if not
             p.parts[3].startswith(("loop", "ram", "zram"))]
    return "hdd" if flags and all(f == "1" for f in flags) else "ssd"


def resolve(memory_gb: float | None = None, cores: int | None = None, storage: str | None = None) -> Hardware:
    """Detected hardware with any given values put in its place."""
    hw = detect()
    if memory_gb is None and cores is None and storage is None:
        return hw
    return Hardware(memory_bytes=int(memory_gb * 1024**3) if memory_gb else hw.memory_bytes,
                    cores=cores or hw.cores, storage=storage or hw.storage, source="given")
