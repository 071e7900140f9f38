"""Settings from the environment (prefix ``ADVISOR_``). Only the web and settings edges use pydantic."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_store() -> str:
    return str(Path.home() / ".local" / "share" / "db-advisor" / "advisor.duckdb")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADVISOR_", extra="ignore")

    # ADVISOR_STORE: path of the DuckDB file (one process at a time), or a postgresql:// URL of a database that
    # several advisor processes share (then set ADVISOR_SECRET_KEY, the same in each)
    store: str = _default_store()
    # ADVISOR_RAY: where searches run their trials: a Ray cluster's address (host:port, ray://...), or auto (a
    # local cluster on loopback, started on first use); unset or none: in the advisor's own process
    ray: str | None = None
    device: str = "auto"  # ADVISOR_DEVICE: auto | cpu | cuda (model training)
    debug: bool = False  # ADVISOR_DEBUG: tracebacks on errors
    # An OpenAI-compatible chat completions server (llama.cpp, vLLM, OpenAI) that proposes the first knob
    # configurations of a search; without one, hardware and workload rules do (optimizers.knobs.llm).
    llm_url: str | None = None  # ADVISOR_LLM_URL: base URL, e.g. http://127.0.0.1:8080/v1
    llm_model: str = "default"  # ADVISOR_LLM_MODEL
    llm_api_key: SecretStr | None = None  # ADVISOR_LLM_API_KEY: sent as a Bearer token, never shown
    llm_timeout_s: float = 60.0  # ADVISOR_LLM_TIMEOUT_S: per request
    # Target credentials are encrypted at rest (Fernet) with this key, or with the key in ``key_file`` (created
    # with mode 0600 beside the store when neither is given). Losing the key means registering targets again.
    secret_key: SecretStr | None = None  # ADVISOR_SECRET_KEY: a Fernet key (urlsafe base64, 32 bytes)
    key_file: str | None = None  # ADVISOR_KEY_FILE: default <store dir>/secret.key
    session_ttl_s: float = 8 * 3600.0  # ADVISOR_SESSION_TTL_S: web login lifetime
    # The one directory whose files a learned-index run started over REST, the web UI or a schedule may read keys
    # from (advisor.tuning.learned_index.keys.confined: resolved, links followed, it must lie inside). None (the
    # default): those faces take only key columns and synthetic key sets; the command line reads its user's files.
    key_files_dir: str | None = None  # ADVISOR_KEY_FILES_DIR
    # The reverse proxies in front of `advisor serve` whose X-Forwarded-For and X-Forwarded-Proto are believed:
    # comma-separated addresses or networks (CIDR). Empty (the default): no forwarded header is believed, a client
    # is the address that connected (the failed-login throttle and the audit use it).
    trusted_proxies: str = ""  # ADVISOR_TRUSTED_PROXIES: e.g. 127.0.0.1 for a TLS proxy on the same host
    # Production DDL (CREATE INDEX, ALTER SYSTEM) gives up after waiting this long for a lock another session
    # holds, and the apply or rollback fails with a clear message instead of queueing behind it.
    production_lock_timeout_s: float = 10.0  # ADVISOR_PRODUCTION_LOCK_TIMEOUT_S
    # An apply or rollback marks its recommendation as claimed while it runs; a claim whose process is gone
    # (same host) or older than this may be taken over.
    apply_claim_ttl_s: float = 6 * 3600.0  # ADVISOR_APPLY_CLAIM_TTL_S
    # A rolled-back recommendation is approved and applied again (`recommendations apply ID`, one step) while its
    # evidence is fresh: validated at most this many days ago, and not rolled back by its watch (production found it
    # slower). Older, the target is tuned again for a fresh validation.
    reapply_max_age_days: float = 7.0  # ADVISOR_REAPPLY_MAX_AGE_DAYS
    # ADVISOR_MAX_PARALLEL_RUNS: tuning runs the server executes at once, each of another target (a target has one
    # run at a time): a target that stopped answering holds one of them until the target timeout below ends its run,
    # never the others (with 1, every run waits behind it)
    max_parallel_runs: int = 4
    # How long the advisor waits for one answer of a target (a read or a write on any connection it opens, the
    # watcher's included) before it gives up with "target X did not answer within N s" (connectors.deadlines): its
    # own statements (catalog reads, observation, plans, a measured statement); and, for work that is long by nature
    # (index builds on production or a shadow, bulk loads, a replay without a statement timeout), the long one.
    target_timeout_s: float = 900.0  # ADVISOR_TARGET_TIMEOUT_S
    target_long_timeout_s: float = 24 * 3600.0  # ADVISOR_TARGET_LONG_TIMEOUT_S
    # Every applied change is watched (advisor.service.watch): for this long after the apply, the statements its
    # evidence measured are compared with their production latency before it, and the change is rolled back when
    # they got slower than the limit. A statement is judged once it ran this many times before and since.
    watch_window_s: float = 3600.0  # ADVISOR_WATCH_WINDOW_S: the watch's window, seconds
    watch_min_calls: int = 20  # ADVISOR_WATCH_MIN_CALLS: calls a statement needs before and since to be judged
    watch_max_regression: float = 0.10  # ADVISOR_WATCH_MAX_REGRESSION: rolled back above 1 + this (0.10: 10% slower)
    watch_interval_s: float = 60.0  # ADVISOR_WATCH_INTERVAL_S: how often `advisor serve` checks the watches
    # The regression guard (advisor.tuning.evidence): a statement that got slower by the regression threshold blocks
    # a change only when it matters, i.e. it takes at least this share of the replayed workload's time (calls x
    # baseline median) or of its calls, or what it got slower by is itself that share of the time. A rarer one is
    # reported beside the verdict ("1 rare statement slower"), never hidden. 1%: an ad-hoc count(*) run once among
    # thousands of calls (0.2% of the time) no longer blocks an index serving 93% of it, while a statement a DBA
    # would miss (1% of the time, or 1 call in 100) still does. 0 makes every regression block.
    guard_min_time_share: float = 0.01  # ADVISOR_GUARD_MIN_TIME_SHARE: a fraction of the baseline's weighted time
    guard_min_call_share: float = 0.01  # ADVISOR_GUARD_MIN_CALL_SHARE: a fraction of the workload's calls
    # A run on a target with a warm replica waits at most this long for the replica to replay what the run's
    # observation saw; then it says how far behind the replica is and goes on (advisor.tuning.shadows).
    replica_wait_s: float = 120.0  # ADVISOR_REPLICA_WAIT_S
    # The nice value every server the project starts and every thread that times statements run at
    # (advisor.core.priority): a busy machine then slows the measurement less than it slows its neighbours. Needs
    # root or CAP_SYS_NICE below 0; without them nothing changes and every measured line says so. 0: leave it.
    measure_nice: int = -10  # ADVISOR_MEASURE_NICE


def get_settings() -> Settings:
    return Settings()
