"""What the advisor writes into and reads out of engine text, the same for every engine:

- ``TAG``: the comment on every statement the advisor itself sends (capture leaves those out of the workload);
- ``scrub``: any DSN text with its password masked;
- ``tool_error``: what a client program (pg_dump, pg_restore, mariadb-dump) said went wrong, as one line, so that
  every engine's shadow cloning reports a failed copy the same way;
- ``check_dsn_parts``: every engine's DSN parser refuses a part (user, password, host, database, an option) that
  holds a control character after percent-decoding: a line break in a user name would start a new line in a
  client program's option file (an option injected), and no real login, host or database name holds one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from advisor.core.errors import TargetUnreachable
from advisor.core.inputs import control_character

# Every statement the advisor itself sends starts with this comment, so that capture can leave it out of the
# observed workload (statement statistics keep the first-seen text, comment included). Valid SQL in every engine.
TAG = "/* db-advisor */ "


def check_dsn_parts(parts: Mapping[str, object]) -> None:
    """TargetUnreachable naming the first part of a parsed DSN (``{"user": ..., "password": ...}``, decoded) that
    holds a control character (newline, carriage return, tab, NUL, ESC, ...); the value itself is never repeated.

    >>> check_dsn_parts({"user": "bob", "host": "db"})
    >>> check_dsn_parts({"user": 'dba"\\nlog-error=/tmp/x'})
    Traceback (most recent call last):
    ...
    advisor.core.errors.TargetUnreachable: invalid DSN: the user holds a control character (U+000A); no part of a DSN may hold one
    """
    for key, value in parts.items():
        bad = control_character(str(value)) if value is not None else None
        if bad:
            raise TargetUnreachable(f"invalid DSN: the {key} holds a control character ({bad}); no part of a DSN "
                                    "may hold one")


def scrub(text: str) -> str:
    """``text`` with anything that looks like a password in a DSN (``password=...``, ``//user:secret@``) masked;
    for DSNs that cannot be parsed: a value runs to the next blank (a backslash-escaped one included) or is
    quoted, an unterminated quote running to the end.

    >>> scrub("host=db password=p&ss0rd user=u"), scrub("password='two words' x=1"), scrub("password=a\\\\ b c")
    ('host=db password=*** user=u', 'password=*** x=1', 'password=*** c')
    >>> scrub("password='never closed user=u"), scrub("postgresql://u:s3cret@db/x?password=other")
    ('password=***', 'postgresql://u:***@db/x?password=***')
    """
    text = re.sub(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)+)", r"\1***", text)
    return re.sub(r"(//[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


# levels of a client program's own messages that say what went wrong ("pg_dump: error: ...", "pg_restore: detail:
# ...", "mariadb-dump: Got error: ..."); its warnings and progress are left out
_TOOL_LEVELS = ("error:", "fatal:", "detail:", "hint:", "got error:")
# what starts the SQL a program echoes (the statement that failed, not what went wrong): pg_dump's "Query was:",
# pg_restore's "Command was:", and the server's "LINE n:" (with a caret under it) and "QUERY:"
_ECHO = re.compile(r"^(?:(?:error|detail):\s*)?(?:(?:query|command) was:|LINE \d+:|QUERY:)", re.IGNORECASE)


def tool_error(tool: str, stderr: str | None, limit: int = 400) -> str:
    r"""What the client program ``tool`` said went wrong, from its ``stderr``, as one line of at most ``limit``
    characters with passwords masked: its own messages (``tool: error: ...`` with the lines that continue it, such
    as libpq's reason, and ``tool: detail:`` / ``hint:``), never the SQL it echoes (``Query was:``, ``Command
    was:``); when it said none of those, its first non-empty line; ``""`` when it said nothing.

    >>> tool_error("pg_dump", '''pg_dump: error: query failed: FATAL:  terminating connection due to administrator command
    ... server closed the connection unexpectedly
    ... \tThis probably means the server terminated abnormally
    ... \tbefore or while processing the request.
    ... pg_dump: detail: Query was: SELECT p.tableoid, p.oid, p.proname
    ... FROM pg_proc p
    ... LEFT JOIN pg_init_privs pip ON (p.oid = pip.objoid AND pip.classoid = 'pg_proc'::regclass)
    ... WHERE p.pronamespace <> 'pg_catalog'::regnamespace
    ...   OR p.proacl IS DISTINCT FROM pip.initprivs)
    ... ''')
    'pg_dump: error: query failed: FATAL: terminating connection due to administrator command; server closed the connection unexpectedly This probably means the server terminated abnormally before or while processing the request.'
    >>> tool_error("pg_dump", "pg_dump: error: aborting because of server version mismatch\n"
    ...                       "pg_dump: detail: server version: 16.2; pg_dump version: 15.6\n")
    'pg_dump: error: aborting because of server version mismatch | pg_dump: detail: server version: 16.2; pg_dump version: 15.6'
    >>> tool_error("pg_restore", 'pg_restore: error: could not execute query: ERROR:  relation "orders" already '
    ...            'exists\nCommand was: CREATE TABLE public.orders (\n    id integer\n);\n\n'
    ...            'pg_restore: warning: errors ignored on restore: 1\n')
    'pg_restore: error: could not execute query: ERROR: relation "orders" already exists'
    >>> tool_error("pg_dump", 'pg_dump: error: query failed: ERROR:  column "x" does not exist\nLINE 1: SELECT x '
    ...            'FROM pg_class\n               ^\npg_dump: detail: Query was: SELECT x FROM pg_class\n')
    'pg_dump: error: query failed: ERROR: column "x" does not exist'
    >>> tool_error("pg_dump", "could not connect to postgresql://bob:secret@db:5432/shop\nmore\n")
    'could not connect to postgresql://bob:***@db:5432/shop'
    >>> tool_error("pg_dump", "  \n"), tool_error("pg_dump", None)
    ('', '')
    """
    prefix = f"{tool}: "
    messages: list[list[str]] = []  # each: a line of the program's own and the lines that continue it
    for line in (stderr or "").splitlines():
        if line.startswith(prefix) or not messages:
            messages.append([line])
        else:
            messages[-1].append(line)
    kept = []
    for message in messages:
        head = message[0].removeprefix(prefix)
        if not message[0].startswith(prefix) or not head.lower().startswith(_TOOL_LEVELS) or _ECHO.match(head):
            continue
        text = " ".join(message[0].split())
        for line in message[1:]:
            if _ECHO.match(line.strip()):
                break  # the rest is the statement it echoes
            if line.strip():  # an indented line wraps the line above; another one is a sentence of its own
                text += (" " if line[:1].isspace() else "; ") + " ".join(line.split())
        kept.append(text)
    text = " | ".join(kept) or next((" ".join(ln.split()) for ln in (stderr or "").splitlines() if ln.strip()), "")
    text = scrub(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."
