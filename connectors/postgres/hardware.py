"""The server's own hardware, read through SQL: ``pg_read_file`` of /proc/meminfo and /proc/cpuinfo (and the
cgroup limits beside them, when the server runs in a container). Only a superuser or a member of
``pg_read_server_files`` may read server files, and only a Linux server has /proc: anything else answers None,
and the caller falls back to what the user gave (``advisor.core.hardware.for_target``).
"""

from __future__ import annotations

import math

import psycopg

from advisor.core.domain import Hardware
from connectors.postgres.connection import TAG

READ_SQL = TAG + "SELECT pg_read_file(%s)"
CAN_READ_SQL = TAG + """
SELECT rolsuper OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')
FROM pg_roles WHERE rolname = current_user"""


def read_hardware(conn: psycopg.Connection) -> Hardware | None:
    """Memory (the smaller of /proc/meminfo's MemTotal and a cgroup limit) and cores (processors, or a cgroup CPU
    quota) of the server behind ``conn``; None when the files cannot be read."""
    row = conn.execute(CAN_READ_SQL).fetchone()
    if not row or not row[0]:
        return None
    meminfo = _read(conn, "/proc/meminfo")
    if not meminfo:
        return None
    memory = mem_total(meminfo)
    if memory is None:
        return None
    limit = cgroup_memory(_read(conn, "/sys/fs/cgroup/memory.max")
                          or _read(conn, "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
    if limit is not None:
        memory = min(memory, limit)
    cores = processors(_read(conn, "/proc/cpuinfo") or "")
    quota = cgroup_cpus(_read(conn, "/sys/fs/cgroup/cpu.max"))
    if quota is not None:
        cores = min(cores, quota) if cores else quota
    return Hardware(memory_bytes=memory, cores=max(cores, 1), storage=storage(conn), source="server")


def storage(conn: psycopg.Connection) -> str:
    """``hdd`` when every block device of the server is rotational, ``ssd`` when one is not, ``unknown`` when the
    server's /sys/block cannot be listed."""
    try:
        devices = [r[0] for r in conn.execute(TAG + "SELECT pg_ls_dir('/sys/block')")]
    except psycopg.Error:
        return "unknown"
    flags = [(_read(conn, f"/sys/block/{d}/queue/rotational") or "").strip() for d in devices
             if not d.startswith(("loop", "ram", "zram"))]
    flags = [f for f in flags if f in ("0", "1")]
    if not flags:
        return "unknown"
    return "hdd" if all(f == "1" for f in flags) else "ssd"


def _read(conn: psycopg.Connection, path: str) -> str | None:
    try:
        return conn.execute(READ_SQL, (path,)).fetchone()[0]
    except psycopg.Error:  # no such file (not Linux, no cgroup v2), or no right to read it
        return None


def mem_total(meminfo: str) -> int | None:
    """Bytes of MemTotal in /proc/meminfo's text.

    >>> mem_total("MemTotal:       16303428 kB\\nMemFree:  1 kB")
    16694710272
    """
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            return int(fields[1]) * (1024 if fields[-1] == "kB" else 1)
    return None


def processors(cpuinfo: str) -> int:
    """The processors /proc/cpuinfo lists.

    >>> processors("processor\\t: 0\\nmodel name\\t: x\\n\\nprocessor\\t: 1\\n")
    2
    """
    return sum(1 for line in cpuinfo.splitlines() if line.split(":")[0].strip() == "processor")


def cgroup_memory(text: str | None) -> int | None:
    """A cgroup's memory limit in bytes; None without one (``max``, or v1's 'unlimited' page-counter maximum).

    >>> cgroup_memory("max\\n"), cgroup_memory("4294967296\\n"), cgroup_memory("9223372036854771712")
    (None, 4294967296, None)
    """
    value = (text or "").strip()
    if not value.isdigit() or int(value) >= 2**60:
        return None
    return int(value)


def cgroup_cpus(text: str | None) -> int | None:
    """Cores a cgroup v2 ``cpu.max`` allows (quota / period, rounded up); None when unlimited.

    >>> cgroup_cpus("max 100000"), cgroup_cpus("150000 100000"), cgroup_cpus(None)
    (None, 2, None)
    """
    fields = (text or "").split()
    if len(fields) != 2 or not fields[0].isdigit() or not fields[1].isdigit() or int(fields[1]) == 0:
        return None
    return max(math.ceil(int(fields[0]) / int(fields[1])), 1)
