"""A warm replica of a PostgreSQL target whose major version differs from the server installed here: a local cluster
that follows the target's database by logical replication (``replica_check.method`` chooses it; the physical
standby, ``replica_standby.StandbyReplica``, is the rest of its behaviour: starting, stopping, waiting, cutting clones).

Built once by ``build``: a new cluster (``initdb``, this host's major) on the copy-on-write volume, socket-only in a
mode-0700 directory, configured here with the target's tuning-relevant settings this server knows; the target
database's schema copied with a pg_dump as new as the target (``binaries.client_bin_for``; a newer dump's ``SET``
of a parameter this server lacks is the one restore error tolerated, any other names its object and fails the
build); then a SUBSCRIPTION to the target's publication FOR ALL TABLES (the DBA's, see ``replica_check``) through
a slot of its own on the target (``advisor_<id>``), which copies the tables and then streams their changes.
The subscription's connection string (the target's password with it) lives in the replica's catalog only.

Lag: the target's current WAL position against the slot's confirmed flush position (what the replica applied and
wrote), the WAL sender's state, and the tables still in their initial copy. A clone starts with no apply worker
(``CLONE_SETTINGS``) and its copy of the subscription is disabled, unlinked from the slot and dropped
(``detach_clone``), so a clone never touches the target's slot; its sequences, which logical replication does
not copy, are set past their columns' largest values. ``remove`` drops the subscription and its slot (the slot
through the link recorded at build, the target's password given by the caller, when the replica cannot start).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from advisor.core.errors import SandboxError
from advisor.core.progress import Say, silent
from connectors.postgres import replica_check
from connectors.postgres.binaries import client_bin_for
from connectors.postgres.connection import TAG, connect, parse_dsn
from connectors.postgres.replica_standby import (BASE_COPY_TIMEOUT_S, StandbyReplica, _chown_tree,
                                                 _quoted, _server_user, undo_build)
from connectors.postgres.sandbox import PRELOAD
from connectors.postgres.server_control import as_server_user, run_tool
from connectors.postgres.shadow import copied_settings
from connectors.replica import CLONES, Lag, ReplicaUnavailable

SCHEMA_FILE = "schema.sql"
PSQL_ERROR = re.compile(r"^psql:.*?:(\d+): ERROR:\s+(.*)$")
TOLERATED = "unrecognized configuration parameter"  # a newer pg_dump's SET of a parameter this server lacks

DATABASE_SQL = TAG + """SELECT pg_encoding_to_char(encoding), datcollate, datctype, pg_database_size(oid)
FROM pg_database WHERE datname = current_database()"""
SUBSCRIPTION_SQL = TAG + """
SELECT st.pid, (SELECT count(*) FROM pg_subscription_rel r WHERE r.srsubid = s.oid AND r.srsubstate <> 'r')::int
FROM pg_subscription s LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL
WHERE s.subname = %s"""
SLOT_SQL = TAG + """
SELECT s.slot_name IS NOT NULL, (pg_current_wal_lsn() - s.confirmed_flush_lsn)::bigint, r.state,
       extract(epoch FROM now() - r.reply_time)
FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = %s
     LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid"""
ERRORS_SQL = TAG + "SELECT sync_error_count + apply_error_count FROM pg_stat_subscription_stats WHERE subname = %s"
# what an apply worker's error says in the log (a change the replica cannot apply, e.g. after DDL on the target)
APPLY_ERRORS = ("processing remote data", "logical replication target relation")
COPY_ATTEMPTS = 3  # a table copy or apply that failed this often during the build fails it
OWNED_SEQUENCES_SQL = TAG + """
SELECT format('%I.%I', sn.nspname, s.relname), format('%I.%I', tn.nspname, t.relname), a.attname
FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
JOIN pg_class t ON t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
JOIN pg_namespace sn ON sn.oid = s.relnamespace JOIN pg_namespace tn ON tn.oid = t.relnamespace
WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')"""
# reached, as replica.replayed says: a position just past a WAL page's header counts from the page's start
CONFIRMED_SQL = TAG + """
SELECT s.confirmed_flush_lsn >= p - CASE WHEN o <= 40 THEN o ELSE 0 END
FROM pg_replication_slots s, (SELECT %s::pg_lsn AS p) x,
     LATERAL (SELECT (x.p - '0/0'::pg_lsn) %% current_setting('wal_block_size')::numeric AS o) y
WHERE s.slot_name = %s"""


class LogicalReplica(StandbyReplica):
    """A logical replica of one PostgreSQL target's database (``connectors.replica.Replica``)."""

    method = "logical"
    CLONE_SETTINGS = {"max_logical_replication_workers": "0"}  # a clone's copy of the subscription never runs

    @classmethod
    def build(cls, target, directory: Path, say: Say = silent) -> LogicalReplica:
        missing = replica_check.requirements(target.dsn)
        if missing:
            raise ReplicaUnavailable("the target cannot feed a replica: " +
                                     "; ".join(f"{what} (fix: {fix})" for what, fix in missing))
        facts = replica_check.facts(target.dsn)
        with connect(target.dsn) as conn:
            encoding, collate, ctype, size = conn.execute(DATABASE_SQL).fetchone()
            publication = conn.execute(replica_check.PUBLICATION_SQL).fetchone()[0]
        replica = cls._new(target, directory, 3 * int(size), say)
        replica.record.update(publication=publication, target_major=facts.major)
        try:
            replica._initdb(say)
            replica._configure(target, {}, {})
            replica._write_record()
            replica.ensure_running(say)
            replica._create_database(encoding, collate, ctype, say)
            replica._copy_schema(target, facts.major, say)
            replica._subscribe(target, say)
            say(f"replica: copying the target's tables ({int(size) / 2**20:.0f} MB) by logical replication")
            replica._initial_copy(replica.position(target), say)
        except BaseException:
            undo_build(replica, target, say)
            raise
        say(f"replica: a logical replica of {target.display_name} (PostgreSQL {facts.major}, this host's "
            f"{facts.here}) runs in {directory} ({replica.lag().line()})")
        return replica

    # --- built once ------------------------------------------------------------------------------------------

    def _initdb(self, say: Say) -> None:
        owner = _server_user()
        self.data.mkdir(mode=0o700)
        for d in (self.volume, self.data):
            if owner is not None:
                os.chown(d, *owner)
        say("replica: a new local cluster for a logical replica (initdb)")
        try:
            run_tool("replica", str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", timeout=300)
        except SandboxError as e:
            raise ReplicaUnavailable(f"the logical replica's cluster cannot be made: {e}") from None

    def _known_settings(self) -> set[str]:
        out = subprocess.run(as_server_user(str(self.bin / "postgres"), "--describe-config"), capture_output=True,
                             text=True, timeout=60).stdout
        return {line.split("\t", 1)[0] for line in out.splitlines() if line}

    def _configure(self, target, params: dict[str, str], matched: dict[str, str]) -> None:
        """Its own settings after initdb's: socket only, the advisor's libraries, the target's tuning-relevant
        settings that this server knows (a newer target has settings this one would refuse to start with)."""
        owner = _server_user()
        socket_dir = Path(self.record["socket_dir"])
        known = self._known_settings()
        copied = {k: v for k, v in copied_settings(target.knob_catalog()).items() if k in known}
        conf = {**copied, "port": str(self.record["port"]), "listen_addresses": "",
                "unix_socket_directories": str(socket_dir), "unix_socket_permissions": "0700",
                "shared_preload_libraries": PRELOAD, "logging_collector": "off"}
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write(f"\n# db-advisor: logical replica of {self.target_name}\n")
            f.writelines(f"{k} = {_quoted(v)}\n" for k, v in conf.items())
        (self.data / "pg_hba.conf").write_text("local all all trust\n", encoding="utf-8")
        _chown_tree(self.data, owner)
        for d in (socket_dir, self.directory):
            if owner is not None:
                os.chown(d, *owner)
            os.chmod(d, 0o700)
        clones = self.volume / CLONES
        clones.mkdir(exist_ok=True)
        if owner is not None:
            os.chown(clones, *owner)

    def _local(self, dbname: str | None = None) -> psycopg.Connection:
        return psycopg.connect(self._socket_dsn(dbname or self.dbname or "postgres"), autocommit=True,
                               connect_timeout=10)

    def _create_database(self, encoding: str, collate: str, ctype: str, say: Say) -> None:
        """The target's database, with its encoding and (where this host has it) its locale, else locale C."""
        name = sql.Identifier(self.dbname or "postgres")
        create = sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING {}").format(name, sql.Literal(encoding))
        with self._local("postgres") as conn:
            if self.dbname in ("", "postgres"):
                return
            try:
                conn.execute(sql.SQL("{} LC_COLLATE {} LC_CTYPE {}").format(create, sql.Literal(collate),
                                                                            sql.Literal(ctype)))
            except psycopg.Error:
                say(f"replica: this host lacks the target's locale {collate}: the replica's database uses C")
                conn.execute(sql.SQL("{} LC_COLLATE 'C' LC_CTYPE 'C'").format(create))

    def _copy_schema(self, target, major: int, say: Say) -> None:
        """pg_dump --schema-only of the target's database (by a pg_dump as new as it), restored here with that
        pg_dump's psql; ReplicaUnavailable naming the first object that does not restore."""
        bin_dir = client_bin_for(major)
        if bin_dir is None:
            raise ReplicaUnavailable(f"no pg_dump of PostgreSQL {major} or later on this host: "
                                     f"apt-get install postgresql-client-{major}")
        params = parse_dsn(target.dsn)
        env = {**os.environ, "PGAPPNAME": "db-advisor replica"}
        if "password" in params:
            env["PGPASSWORD"] = params["password"]
        dump = self.directory / SCHEMA_FILE
        say(f"replica: copying the target's schema (pg_dump {major} --schema-only)")
        conninfo = make_conninfo(**{k: v for k, v in params.items() if k != "password"})
        done = subprocess.run([str(bin_dir / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
                               "--no-publications", "--no-subscriptions", "-d", conninfo, "-f", str(dump)],
                              capture_output=True, text=True, env=env, timeout=BASE_COPY_TIMEOUT_S)
        if done.returncode != 0:
            said = [ln for ln in done.stderr.splitlines() if ln.strip()]
            raise ReplicaUnavailable(f"pg_dump of the target's schema failed: "
                                     f"{said[-1] if said else f'exit {done.returncode}'}")
        restored = subprocess.run([str(bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=0", "-d",
                                   self._socket_dsn(self.dbname or "postgres"), "-f", str(dump)],
                                  capture_output=True, text=True, timeout=BASE_COPY_TIMEOUT_S)
        try:
            lines = dump.read_text(encoding="utf-8", errors="replace").splitlines()
        finally:
            dump.unlink(missing_ok=True)
        skipped = []
        for line in restored.stderr.splitlines():
            m = PSQL_ERROR.match(line)
            if m is None:
                continue
            number, error = int(m.group(1)), m.group(2).strip()
            if error.startswith(TOLERATED) and lines[number - 1].lstrip().upper().startswith("SET "):
                skipped.append(error.removeprefix(TOLERATED).strip().strip('"'))
                continue
            raise ReplicaUnavailable(f"the target's schema does not restore into this host's PostgreSQL: "
                                     f"{_object_at(lines, number)}: {error}")
        if restored.returncode != 0:
            raise ReplicaUnavailable(f"the target's schema could not be restored (psql exit {restored.returncode})")
        if skipped:
            say(f"replica: skipped the newer pg_dump's SET of {', '.join(sorted(set(skipped)))} (unknown to this "
                f"host's PostgreSQL)")

    def _subscribe(self, target, say: Say) -> None:
        slot = self.record["slot"]
        link = make_conninfo(**parse_dsn(target.dsn))
        say(f"replica: subscribing to the target's publication {self.record['publication']} (slot {slot})")
        try:
            with self._local() as conn:
                conn.execute(sql.SQL("CREATE SUBSCRIPTION {} CONNECTION {} PUBLICATION {} WITH (slot_name = {}, "
                                     "copy_data = true)").format(sql.Identifier(slot), sql.Literal(link),
                                                                 sql.Identifier(self.record["publication"]),
                                                                 sql.Literal(slot)))
        except psycopg.Error as e:
            raise ReplicaUnavailable(f"the replica's subscription could not be made: "
                                     f"{str(e).strip().splitlines()[0]}") from None

    def _initial_copy(self, point: str, say: Say) -> None:
        """Wait until every table is copied and the replica applied the target's changes up to ``point``;
        ReplicaUnavailable when it breaks or its copy keeps failing (the replica's last error)."""
        started = last_said = time.monotonic()
        while True:
            with contextlib.suppress(psycopg.OperationalError):
                if self.replayed(point):
                    return
            lag = self.lag()
            if lag.broken:
                raise ReplicaUnavailable(f"the logical replica does not follow the target: {lag.state}")
            with self._local() as conn:
                errors = conn.execute(ERRORS_SQL, [self.record["slot"]]).fetchone()
            if errors and errors[0] >= COPY_ATTEMPTS:
                raise ReplicaUnavailable(f"the logical replica's copy keeps failing: {self._last_error()}")
            now = time.monotonic()
            if now - started > BASE_COPY_TIMEOUT_S:
                raise ReplicaUnavailable(f"the logical replica's initial copy did not end ({lag.line()})")
            if now - last_said >= 5:
                last_said = now
                say(f"replica: {lag.line()} ({now - started:.0f} s)")
            time.sleep(0.2)

    def _last_error(self) -> str:
        errors = [ln for ln in self._log_tail(50).split(" | ") if "ERROR:" in ln]
        return errors[-1].split("ERROR:", 1)[1].strip() if errors else "(no error in its log)"

    # --- running ---------------------------------------------------------------------------------------------

    def _user(self) -> str:
        return "postgres"  # initdb's superuser here: the target's logins are not copied

    def _link(self) -> dict[str, str]:
        """The target's connection parameters, from the subscription in the replica's catalog (its password with
        it), else as recorded at build (none: {} for a replica built before links were recorded)."""
        try:
            with self._local() as conn:
                row = conn.execute(TAG + "SELECT subconninfo FROM pg_subscription WHERE subname = %s",
                                   [self.record["slot"]]).fetchone()
        except psycopg.Error:
            row = None
        if row:
            return {k: str(v) for k, v in conninfo_to_dict(row[0]).items()}
        return dict(self.record.get("link") or {})

    def _target(self) -> psycopg.Connection:
        """A connection to the target (``_link``); ReplicaUnavailable when the link is unknown (libpq's defaults
        would reach some other server)."""
        link = self._link()
        if not link:
            raise ReplicaUnavailable(f"the replica's link to its target is unknown: no subscription in the replica "
                                     f"and none recorded in {self.directory} (rebuild the replica)")
        return psycopg.connect(**link, autocommit=True, connect_timeout=10)

    def lag(self) -> Lag:
        if not self.running():
            return Lag(None, None, "stopped")
        try:
            with self._local() as conn:
                sub = conn.execute(SUBSCRIPTION_SQL, [self.record["slot"]]).fetchone()
        except psycopg.Error as e:
            return Lag(None, None, f"broken: the replica does not answer ({str(e).strip().splitlines()[0]})")
        if sub is None:
            return Lag(None, None, "broken: the replica's subscription is gone (rebuild the replica)")
        _worker, copying = sub
        try:
            with self._target() as conn:
                exists, behind, sender, seen = conn.execute(SLOT_SQL, [self.record["slot"]]).fetchone()
        except psycopg.Error:
            return Lag(None, None, "reconnecting: the target does not answer the replica (it retries every few "
                                   "seconds)")
        if not exists:
            return Lag(None, None, f"broken: its replication slot {self.record['slot']} is gone on the target "
                                   f"(rebuild the replica)")
        behind = max(0, int(behind or 0))
        if copying:
            return Lag(behind, None, f"initial copy ({copying} table(s) left)")
        if sender in ("streaming", "catchup"):
            return Lag(behind, (float(seen) if seen is not None else None) if behind else 0.0,
                       "streaming" if sender == "streaming" else "catching up")
        return Lag(behind, None, self._why_not_streaming())

    def _why_not_streaming(self) -> str:
        why = super()._why_not_streaming()
        tail = self._log_tail(20)
        if why.startswith("broken") or not any(w in tail for w in APPLY_ERRORS):
            return why
        return f"broken: the replica cannot apply the target's changes ({self._last_error()}; rebuild the replica)"

    def replayed(self, point: str) -> bool:
        """Whether every table finished its initial copy and the target's slot confirms the replica wrote what
        the target had logged up to ``point``."""
        with self._local() as conn:
            sub = conn.execute(SUBSCRIPTION_SQL, [self.record["slot"]]).fetchone()
        if sub is None or sub[1]:
            return False
        with self._target() as conn:
            row = conn.execute(CONFIRMED_SQL, [point, self.record["slot"]]).fetchone()
        return bool(row and row[0])

    # --- clones and removal ------------------------------------------------------------------------------------

    def detach_clone(self, clone) -> None:
        """The clone's copy of the subscription, disabled, unlinked from the slot and dropped (no connection to the
        target is made: the slot stays the replica's)."""
        with psycopg.connect(clone.dsn(), autocommit=True, connect_timeout=10) as conn:
            _cut_subscriptions(conn)
            _sequences_past_their_rows(conn)

    def _let_go(self) -> None:
        """The subscription dropped (its slot with it, when the target answers), else cut loose from the target
        (``remove`` then drops the slot); nothing when the replica cannot start."""
        if not self.data.is_dir():
            return
        try:
            self.ensure_running()
        except ReplicaUnavailable:
            return
        with contextlib.suppress(psycopg.Error), self._local() as conn:
            try:
                conn.execute(sql.SQL("DROP SUBSCRIPTION IF EXISTS {}").format(sql.Identifier(self.record["slot"])))
            except psycopg.Error:  # the target does not answer, or its slot is gone: the replica lets go of it
                _cut_subscriptions(conn)


def _cut_subscriptions(conn: psycopg.Connection) -> None:
    """Every subscription of ``conn``'s database, dropped without a word to its publisher."""
    names = [r[0] for r in conn.execute(TAG + "SELECT subname FROM pg_subscription WHERE subdbid = "
                                              "(SELECT oid FROM pg_database WHERE datname = current_database())")]
    for name in names:
        ident = sql.Identifier(name)
        conn.execute(sql.SQL("ALTER SUBSCRIPTION {} DISABLE").format(ident))
        conn.execute(sql.SQL("ALTER SUBSCRIPTION {} SET (slot_name = NONE)").format(ident))
        conn.execute(sql.SQL("DROP SUBSCRIPTION {}").format(ident))


def _sequences_past_their_rows(conn: psycopg.Connection) -> None:
    """Logical replication copies no sequence: each one a column owns (serial, identity) is set past that column's
    largest value, so the clone's inserts do not collide with the copied rows."""
    owned = conn.execute(OWNED_SEQUENCES_SQL).fetchall()
    for sequence, table, column in owned:
        conn.execute(sql.SQL("SELECT setval({}, max({})) FROM {} HAVING max({}) IS NOT NULL").format(
            sql.Literal(sequence), sql.Identifier(column), sql.SQL(table), sql.Identifier(column)))


def _object_at(lines: list[str], number: int) -> str:
    """The object a line of a pg_dump file belongs to (its ``-- Name: ...; Type: ...`` header)."""
    for line in reversed(lines[:number]):
        if line.startswith("-- Name: "):
            fields = dict(part.strip().split(": ", 1) for part in line[3:].split(";") if ": " in part)
            schema = fields.get("Schema", "-")
            return f"{fields.get('Type', 'object')} {'' if schema == '-' else schema + '.'}{fields.get('Name', '?')}"
    return f"line {number} of the schema"
