"""Errors a user can act on. Each carries one clear, single-line message.

Every layer raises these (never bare exceptions) for conditions caused by input or by the environment, so the
CLI, REST API and scheduler can report them without a traceback.
"""


class AdvisorError(Exception):
    """Base class: an error with a message meant for the user."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TargetUnreachable(AdvisorError):
    """The database could not be reached (bad DSN, server down, connection dropped)."""


class MissingExtension(AdvisorError):
    """A required extension (pg_stat_statements, hypopg, pg_qualstats) is not installed or not preloaded."""


class UnknownKnob(AdvisorError):
    """A setting name that the target's catalog does not have."""


class InvalidKnobValue(AdvisorError):
    """A value that cannot be parsed for its knob or lies outside the catalog's bounds."""


class BadStatement(AdvisorError):
    """SQL that cannot be parsed, bound or executed. ``reason``: the parser's (or the server's) own words;
    ``position``: where in the statement it stopped reading (1-based characters), when it says."""

    def __init__(self, message: str, *, reason: str | None = None, position: int | None = None):
        super().__init__(message)
        self.reason = reason if reason is not None else message
        self.position = position


class StatementTimeout(BadStatement):
    """A statement ran past the session's statement timeout (or was cancelled) and was stopped by the server."""


class StatementFailed(BadStatement):
    """The server refused or failed one statement (its own message, one line); the session is still usable."""


class SandboxError(AdvisorError):
    """A local server could not be created, started or stopped."""


class StoreError(AdvisorError):
    """The advisor's own store is unusable or an operation on it is not allowed."""


class StoreLocked(StoreError):
    """A DuckDB store file another process holds (DuckDB lets one process open it); ``pid``: that process, when
    the file's lock names it. ``open_store`` turns it into the holder's answers (``advisor.storage.remote``)."""

    def __init__(self, message: str, path: str, pid: int | None = None):
        super().__init__(message)
        self.path, self.pid = path, pid


class InvalidTransition(StoreError):
    """A recommendation state change that its lifecycle does not allow."""


class InvalidInput(AdvisorError):
    """Input that can never be valid: a control character in a name or note, a name that reads as an id."""


class Ambiguous(AdvisorError):
    """A reference that could mean more than one stored object (never resolved by a guess)."""


class NotFound(AdvisorError):
    """A named object (target, recommendation, optimizer) does not exist."""


class BadDevice(AdvisorError, ValueError):
    """A model device that does not exist here (``cuda`` without CUDA, or an unknown name)."""



class Unauthorized(AdvisorError):
    """No credentials, or credentials that are unknown, revoked or expired."""


class Forbidden(AdvisorError):
    """Valid credentials whose role does not allow the action."""


class Conflict(AdvisorError):
    """The action clashes with the current state (a run of the target is already going on, a changed target)."""


class AlreadyExists(Conflict):
    """A change would create an object (an index) that exists already: made by someone else, so never ours to
    drop."""


class ProductionLocked(Conflict):
    """A change to production gave up waiting for a lock another session holds (the lock timeout ran out)."""


class EngineUnsupported(AdvisorError):
    """The target's engine lacks a part the action needs: its connector does not implement that protocol method
    (yet). The message names the engine, the action and the missing part."""


class NotRegistered(AdvisorError):
    """A database given by its DSN that is no registered target, where only a registered one will do."""


class OtherDatabase(Conflict):
    """A DSN reaches a different database than the one a target, or a recommendation, was made for."""


def parser_message(e: Exception) -> str:
    """A SQL parser's error (sqlglot's ``ParseError`` or ``TokenError``) as one line for people: the parser's
    own description with its line and column, never a Python class (``<class '...GT'>`` reads ``GT``) nor the
    terminal colour codes it highlights the text with.

    >>> class ParseError(Exception): errors = [{"description": "Required keyword: 'expression' missing for "
    ...     "<class 'sqlglot.expressions.core.GT'>", "line": 1, "col": 32, "highlight": ">"}]
    >>> parser_message(ParseError())
    "Required keyword: 'expression' missing for GT near '>' (line 1, column 32)"
    """
    import re

    first = (getattr(e, "errors", None) or [None])[0]
    if isinstance(first, dict) and first.get("description"):
        text = re.sub(r"<class '(?:[\w]+\.)*(\w+)'>", r"\1", str(first["description"]))
        near = f" near {first['highlight']!r}" if first.get("highlight") else ""
        where = f" (line {first['line']}, column {first['col']})" if first.get("line") else ""
        return f"{text}{near}{where}"
    line = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return re.sub(r"\x1b\[[0-9;]*m", "", re.sub(r"<class '(?:[\w]+\.)*(\w+)'>", r"\1", line))


class NothingToReplay(AdvisorError):
    """The workload has no statement that can be replayed (none could be bound to values): every kind that
    measures on a shadow fails the same way, so a whole run stops at the first."""
