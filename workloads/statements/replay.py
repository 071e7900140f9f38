"""Replaying bound statements against a server and recording per-statement latency samples (ms).

Each worker thread runs statements on a session of the target's connector (``Connector.session``, any engine).
Writes run inside a transaction that is rolled back, so replay leaves the data as it found it.
A statement that exceeds ``statement_timeout_ms`` is recorded as a timeout with the timeout as its (censored)
latency; any other error is recorded as the typed error it is (``StatementFailed``, ``TargetUnreachable``), so
callers decide by its type, never by its words. Warm-up passes run first and are not recorded. Replay takes the
run's connector (opened once by the service), never a DSN: it opens sessions on it and nothing else. Its
threads run at the measurements' priority (``advisor.core.priority``).

``caps_ms`` cuts single statements sooner than the session's timeout (a candidate that runs many times slower
than its baseline need not run to its end to be known slower): the statement is cancelled (``Session.cancel``)
when its cap passes, and recorded as a timeout at its cap.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from advisor.core import priority
from advisor.core.errors import AdvisorError, StatementFailed, StatementTimeout, TargetUnreachable
from connectors.base import Connector, Session
from workloads.statements.binding import BoundStatement


@dataclass(frozen=True)
class ReplayOptions:
    concurrency: int = 1
    repeats: int = 1  # measured executions of each statement
    warmup: int = 1  # unmeasured executions of each statement first
    statement_timeout_ms: int = 60_000
    caps_ms: Mapping[str, float] | None = None  # queryid -> a cut sooner than the timeout (warm-ups included)


@dataclass
class ReplayResult:
    samples: dict[str, list[float]] = field(default_factory=dict)  # queryid -> latencies, ms
    timeouts: dict[str, int] = field(default_factory=dict)
    errors: dict[str, list[AdvisorError]] = field(default_factory=dict)  # queryid -> typed errors, in order
    wall_ms: float = 0.0

    def first_error(self) -> AdvisorError | None:
        """The first error recorded (of the first statement that had one), else None."""
        return next((e[0] for e in self.errors.values() if e), None)

    def median_ms(self, queryid: str) -> float:
        values = sorted(self.samples.get(queryid, ()))
        if not values:
            return float("nan")
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


Progress = Callable[[int, int], None]


class _Cut:
    """Cancels ``session``'s statement when ``cap_ms`` passes, unless ``stop`` came first; ``stop`` says whether
    it fired (then the statement's timeout was the cap's)."""

    def __init__(self, session: Session, cap_ms: float):
        self.lock = threading.Lock()
        self.running, self.fired = True, False
        self.session = session
        self.timer = threading.Timer(max(cap_ms, 1.0) / 1000.0, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self) -> None:
        with self.lock:
            if not self.running:
                return
            self.fired = True
        self.session.cancel()

    def stop(self) -> bool:
        with self.lock:
            self.running = False
        self.timer.cancel()
        if self.fired:  # the cancel is sent before the session runs anything else
            self.timer.join()
        return self.fired


def replay(connector: Connector, statements: Sequence[BoundStatement], options: ReplayOptions = ReplayOptions(),
           progress: Progress | None = None) -> ReplayResult:
    """Replay ``statements`` on ``connector``'s database (any engine): ``options.warmup`` passes unmeasured, then
    ``options.repeats`` measured ones, over ``options.concurrency`` sessions. A lost connection is recorded as a
    TargetUnreachable of its statement and the worker goes on with a new session; TargetUnreachable is raised when
    none can be opened. TypeError for anything but a connector (a DSN string: the caller opens it once)."""
    if isinstance(connector, str) or not hasattr(connector, "session"):
        raise TypeError("replay takes the run's connector, not a DSN")
    result = ReplayResult()
    lock = threading.Lock()
    jobs: "queue.Queue[tuple[BoundStatement, bool]]" = queue.Queue()
    for _ in range(options.warmup):
        for st in statements:
            jobs.put((st, False))
    for _ in range(options.repeats):
        for st in statements:
            jobs.put((st, True))
    total = jobs.qsize()
    done = [0]
    failure: list[BaseException] = []

    def worker() -> None:
        priority.raise_this_thread()  # a busy machine delays this thread's timing less (advisor.core.priority)
        session: Session | None = None
        try:
            session = connector.session(options.statement_timeout_ms)
        except BaseException as e:  # noqa: BLE001 - reported to the caller below
            failure.append(e)
            return
        try:
            while not failure:
                try:
                    st, measured = jobs.get_nowait()
                except queue.Empty:
                    return
                outcome: AdvisorError | str | None = None
                cap = (options.caps_ms or {}).get(st.queryid)
                # the cut's timer starts outside the timed window: a capped arm pays no thread start in its times
                cut = _Cut(session, cap) if cap is not None and cap < options.statement_timeout_ms else None
                start = time.perf_counter()
                try:
                    session.run(st.sql, rollback=st.is_write)  # a write inside a transaction rolled back
                except StatementTimeout:
                    outcome = "timeout"
                except TargetUnreachable as e:  # the connection is gone: a new one, or TargetUnreachable
                    gone, session = session, None
                    gone.close()
                    outcome = e
                    session = connector.session(options.statement_timeout_ms)
                except StatementFailed as e:
                    outcome = e
                finally:
                    elapsed = (time.perf_counter() - start) * 1000.0
                    fired = cut is not None and cut.stop()
                with lock:
                    if measured:
                        if outcome is None:
                            result.samples.setdefault(st.queryid, []).append(elapsed)
                        elif outcome == "timeout":
                            result.timeouts[st.queryid] = result.timeouts.get(st.queryid, 0) + 1
                            result.samples.setdefault(st.queryid, []).append(
                                float(cap) if fired else float(options.statement_timeout_ms))
                        else:
                            result.errors.setdefault(st.queryid, []).append(outcome)
                    done[0] += 1
                    if progress:
                        progress(done[0], total)
        except BaseException as e:  # noqa: BLE001
            failure.append(e)
        finally:
            if session is not None:
                session.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, options.concurrency))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.wall_ms = (time.perf_counter() - start) * 1000.0
    if failure:
        err = failure[0]
        if isinstance(err, TargetUnreachable):
            raise err
        raise TargetUnreachable(f"replay failed: {err}") from None
    return result
