"""What a MariaDB target must give before a warm replica can follow it (``MariaDBConnector.replica_requirements``),
read without changing anything there: each missing thing with the one line that fixes it.

A GTID replica seeded by ``mariadb-dump --master-data --gtid`` needs: binary logging on (``log_bin``), a server id
other than 0, row-based binary logs (a replica that keeps only the target's database filters statements by their
default database otherwise), and a login with REPLICATION SLAVE (to follow), RELOAD and BINLOG MONITOR (for the
dump's consistent position), or SUPER / ALL PRIVILEGES. A physical seed (``connectors.mariadb.physical_seed``)
needs more (the target's files on this host, a few more privileges); what it lacks is no blocker, the dump is used
instead (``seed_notes``).
"""

from __future__ import annotations

from connectors.mariadb.connection import connect


def literal(value: str) -> str:
    """A MariaDB string literal (a quote doubled, a backslash escaped), as a GRANTEE and a GRANT line spell names."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


NEEDED = ("REPLICATION SLAVE", "RELOAD", "BINLOG MONITOR")
COVERING = {"SUPER", "ALL PRIVILEGES"}
ALIASES = {"BINLOG MONITOR": {"REPLICATION CLIENT"}}


def held_privileges(cur) -> tuple[str, str, str, set[str]]:
    """(CURRENT_USER(), its name, its host, the global privileges it holds) of the connection of cursor ``cur``."""
    cur.execute("SELECT CURRENT_USER()")
    user = str(cur.fetchone()[0])
    name, _, host = user.rpartition("@")
    cur.execute("SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s",
                (f"{literal(name)}@{literal(host)}",))
    return user, name, host, {str(r[0]).upper() for r in cur.fetchall()}


def requirements(dsn: str) -> list[tuple[str, str]]:
    """(what is missing, the line that fixes it) for each thing the target lacks; [] when a replica can follow it."""
    with connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.log_bin, @@GLOBAL.server_id, @@GLOBAL.binlog_format")
        log_bin, server_id, binlog_format = cur.fetchone()
        user, name, host, held = held_privileges(cur)
    missing = []
    if not int(log_bin or 0):
        missing.append(("binary logging is off (log_bin)", "log_bin = ON  # in the target's option file "
                                                            "([mariadbd]), then restart it"))
    if not int(server_id or 0):
        missing.append(("server_id is 0", "server_id = 1  # in the target's option file, then restart it"))
    if str(binlog_format).upper() != "ROW":
        missing.append((f"binlog_format is {binlog_format}", "binlog_format = ROW  # in the target's option file "
                                                            "(or SET GLOBAL binlog_format = 'ROW')"))
    if not held & COVERING:
        lacking = [p for p in NEEDED if p not in held and not held & ALIASES.get(p, set())]
        if lacking:
            missing.append((f"the login {user} lacks {', '.join(lacking)}",
                            f"GRANT {', '.join(lacking)} ON *.* TO {literal(name)}@{literal(host)};  -- on the target"))
    return missing
