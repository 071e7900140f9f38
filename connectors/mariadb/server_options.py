"""What a local MariaDB server is started from: its programs (Debian's ``mariadb-server``, found in ``BIN_DIRS``),
whether we run as root (the server then runs as the ``mysql`` user), the options every sandbox's ``my.cnf`` holds
(``BASE_OPTIONS``; ``NOT_DURABLE`` and ``FEEDS_REPLICAS`` for the sandbox's flags) and the option-file syntax
(``option_lines``). Shared by the sandbox (``connectors.mariadb.sandbox``), the warm replica and its seed."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.errors import SandboxError

BIN_DIRS = ("/usr/sbin", "/usr/bin")
BASE_OPTIONS = {
    "bind-address": "127.0.0.1",
    "skip-name-resolve": None,
    "performance-schema": "ON",
    "performance-schema-consumer-events-statements-history-long": "ON",
    "performance-schema-consumer-events-statements-current": "ON",
    "performance_schema_max_digest_length": "8192",
    "max_digest_length": "8192",
    "innodb_flush_method": "fsync",
    "max_connections": "100",
    "character-set-server": "utf8mb4",
}
# a sandbox's ``durable=False``: the redo log written at each commit but flushed about once a second, no binary
# log flushes, no doublewrite buffer (a crash of the machine may lose the last second; a crash of the server not)
NOT_DURABLE = {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0", "innodb_doublewrite": "0"}
# a sandbox's ``feeds_replicas=True`` (a demo's or bench's "production" server): row-based binary logs, so that
# a warm replica can follow it (``connectors.mariadb.replica``)
FEEDS_REPLICAS = {"log_bin": "mysql-bin", "server_id": "1", "binlog_format": "ROW"}


def binary(name: str) -> str:
    for d in BIN_DIRS:
        path = Path(d) / name
        if path.exists():
            return str(path)
    raise SandboxError(f"MariaDB program {name} not found (looked in {', '.join(BIN_DIRS)}); install it with "
                       "`make bootstrap` or apt-get install mariadb-server")


def as_root() -> bool:
    return os.geteuid() == 0


def option_lines(options: dict[str, str | None]) -> list[str]:
    r"""Options in MariaDB's option-file syntax (``name=value``, a bare name for a flag); values with a blank or
    a quote are double-quoted.

    >>> option_lines({"innodb_buffer_pool_size": "256M", "skip-name-resolve": None, "init_connect": "SET a='b c'"})
    ['innodb_buffer_pool_size=256M', 'skip-name-resolve', 'init_connect="SET a=\'b c\'"']
    """
    out = []
    for key, value in options.items():
        if value is None:
            out.append(key)
        elif any(c in value for c in " \t'\"#\\"):
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'{key}="{escaped}"')
        else:
            out.append(f"{key}={value}")
    return out
