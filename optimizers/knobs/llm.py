"""An LLM that proposes the first knob configurations of a search (LLMTune-style), through any OpenAI-compatible
chat completions server: llama.cpp's ``llama-server``, vLLM, OpenAI.

The prompt gives the workload's features, the hardware, and the searched knobs (range, current value, what
the knob does); the model answers ``{"configs": [{"knobs": {name: value}, "reason": "..."}]}``. Answers are
read defensively (code fences, prose around the JSON, a bare list of configs) and every configuration goes
through ``seeding.sanitize``, so an invented knob or an absurd value never reaches a server. A bad answer is
retried with a note on what was wrong; transport failures (HTTP errors, refused connections, timeouts) raise
``SeedingFailed`` with a message that says which, and never the API key.

>>> endpoint("http://127.0.0.1:8080/v1"), endpoint("http://127.0.0.1:8000")
('http://127.0.0.1:8080/v1/chat/completions', 'http://127.0.0.1:8000/v1/chat/completions')
>>> configs_of('Sure! ```json\\n{"configs": [{"knobs": {"work_mem": "64MB"}, "reason": "sorts"}]}\\n```')
[({'work_mem': '64MB'}, 'sorts')]
>>> configs_of('[{"Random_Page_Cost": 1.1}]')
[({'random_page_cost': 1.1}, '')]
>>> configs_of('{"configs": {"cautious": {"knobs": {"jit": "off"}}, "bold": {"jit": "on", "why": "short"}}}')
[({'jit': 'off'}, ''), ({'jit': 'on'}, 'short')]
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from advisor.core import knobvalues
from optimizers.knobs.features import WorkloadFeatures
from optimizers.knobs.seeding import Seed, SeedingFailed, sanitize
from optimizers.knobs.space import KnobSpace, human_bytes

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 4 * 1024**2
EXCERPT = 200  # characters of a body or an answer quoted in a message

SYSTEM = (
    "You are a PostgreSQL performance expert. You tune server configuration knobs for a given workload and "
    "machine. You answer with a single JSON object and nothing else: no prose, no markdown."
)

ANSWER_SHAPE = '{"configs": [{"knobs": {"<knob name>": "<value as text, with its unit>"}, "reason": "<one sentence>"}]}'


class BadAnswer(Exception):
    """The model's answer could not be used; the message says why (and is told to the model on a retry)."""


class LLMSeeder:
    """Seeds from an OpenAI-compatible chat completions endpoint.

    ``url`` is a base URL as servers document it (``http://127.0.0.1:8080/v1``, ``https://api.openai.com/v1``);
    a full ``.../chat/completions`` URL is used as it is. ``retries`` is how many more requests one call may make
    after a bad answer, a 5xx/429 or a timeout."""

    backoff_s = 0.5  # before retrying a 5xx/429, doubled each time, at most 4 s

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_s: float = 60.0,
                 retries: int = 2):
        if not url or not url.strip():
            raise ValueError("LLMSeeder needs the URL of a chat completions server")
        self.url = url.strip()
        self.endpoint = endpoint(self.url)
        self.model = model
        self._api_key = _secret(api_key)
        self.timeout_s = float(timeout_s)
        self.retries = max(int(retries), 0)
        self._json_mode = True  # off once the server rejects response_format (some OpenAI-compatible ones do)

    def __repr__(self) -> str:
        return f"LLMSeeder({_shown(self.url)!r}, model={self.model!r}, key={'set' if self._api_key else 'none'})"

    # --- the seeding step ----------------------------------------------------------------------------------------

    def seeds(self, space: KnobSpace, features: WorkloadFeatures, n: int) -> tuple[list[Seed], list[str]]:
        """Up to ``n`` sanitized seeds and the warnings for what sanitizing dropped or changed; SeedingFailed
        when the endpoint cannot be used or no answer had a usable configuration."""
        n = max(int(n), 1)
        source = f"llm:{self.model}"
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt(space, features, n)}]
        notes: list[str] = []
        problem = "no answer"
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                answer, finish = self._complete(messages)
            except _Transient as e:
                problem = str(e)
                if last:
                    break
                notes.append(f"{source}: {problem}; retrying")
                time.sleep(min(self.backoff_s * 2**attempt, 4.0) if e.wait is None else e.wait)
                continue
            try:
                seeds, warnings = self._seeds_of(space, answer, source, n)
                return seeds, notes + warnings
            except BadAnswer as e:
                why = str(e)
                if finish == "length":
                    why += " (the answer was cut off at the length limit: write shorter reasons)"
                problem = f"unusable answer: {why}"
                if last:
                    break
                notes.append(f"{source}: {problem}; asking again")
                messages = [*messages, {"role": "assistant", "content": answer[:4000]},
                            {"role": "user", "content": f"That answer could not be used: {why}. Answer again with "
                                                        f"only a JSON object of this shape: {ANSWER_SHAPE}, using "
                                                        f"only the knob names listed before."}]
        tries = self.retries + 1
        raise SeedingFailed(f"LLM {self.model!r} at {_shown(self.endpoint)} gave no usable seeds after "
                            f"{tries} request{'s' if tries > 1 else ''}: {problem}")

    def _seeds_of(self, space: KnobSpace, answer: str, source: str, n: int) -> tuple[list[Seed], list[str]]:
        configs = configs_of(answer)
        seeds: list[Seed] = []
        warnings: list[str] = []
        for i, (knobs, reason) in enumerate(configs, 1):
            seed, warn = sanitize(space, knobs, source, reason)
            warnings += warn
            if seed is None:
                warnings.append(f"{source}: configuration {i} of the answer skipped (nothing usable left)")
            elif all(seed.config != s.config for s in seeds):
                seeds.append(seed)
        if not seeds:
            detail = "; ".join(w.removeprefix(f"{source}: ") for w in warnings[:3])
            raise BadAnswer(f"none of its {len(configs)} configuration(s) has a usable knob ({detail})")
        return seeds[:n], warnings

    # --- transport -------------------------------------------------------------------------------------------------

    def _complete(self, messages: list[dict]) -> tuple[str, str | None]:
        """The content and finish_reason of the first choice. SeedingFailed for what a retry cannot fix,
        _Transient for what it may."""
        body = {"model": self.model, "messages": messages, "temperature": 0.2}
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        try:
            raw = self._post(body)
        except _NoJsonMode:
            log.info("%s rejects response_format; asking for JSON in the prompt only", _shown(self.endpoint))
            self._json_mode = False
            del body["response_format"]
            raw = self._post(body)
        try:
            reply = json.loads(raw.decode("utf-8", errors="replace"))
            choice = reply["choices"][0]
            content = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise SeedingFailed(f"{_shown(self.endpoint)} did not answer like a chat completions endpoint "
                                f"(expected {{\"choices\": [{{\"message\": ...}}]}}): "
                                f"{self._excerpt(raw)!r}") from None
        if not isinstance(content, str):
            content = ""  # a refusal or a tool call: a bad answer, asked again
        return content, choice.get("finish_reason") if isinstance(choice, dict) else None

    def _post(self, body: dict) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "db-advisor"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode(), headers=headers,
                                         method="POST")
        where = _shown(self.endpoint)
        try:
            with self._opener().open(request, timeout=self.timeout_s) as response:
                return response.read(MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as e:
            raise self._http_error(e) from None
        except urllib.error.URLError as e:
            reason = e.reason
            if _is_timeout(reason):
                raise _Transient(f"{where} did not answer within {self.timeout_s:g} s "
                                 f"(timeout; ADVISOR_LLM_TIMEOUT_S)", 0.0) from None
            if isinstance(reason, ConnectionRefusedError):
                raise SeedingFailed(f"cannot connect to the LLM endpoint {where}: connection refused "
                                    f"(is the server running? check ADVISOR_LLM_URL)") from None
            if isinstance(reason, socket.gaierror):
                raise SeedingFailed(f"cannot resolve the LLM endpoint's host in {where} ({reason.strerror})") from None
            raise SeedingFailed(f"cannot reach the LLM endpoint {where}: {self._redact(str(reason))}") from None
        except (TimeoutError, socket.timeout):
            raise _Transient(f"{where} did not answer within {self.timeout_s:g} s "
                             f"(timeout; ADVISOR_LLM_TIMEOUT_S)", 0.0) from None
        except http.client.HTTPException as e:  # not HTTP at all, or a truncated answer
            raise SeedingFailed(f"{where} did not answer with valid HTTP ({type(e).__name__})") from None
        except OSError as e:  # reset or dropped mid-answer
            why = self._redact(str(e)) or type(e).__name__
            raise _Transient(f"the connection to {where} failed: {why}") from None

    def _opener(self) -> urllib.request.OpenerDirector:
        """No proxy for a server on this machine (a local llama.cpp/vLLM); the environment's otherwise."""
        host = urllib.parse.urlsplit(self.endpoint).hostname or ""
        if _loopback(host):
            return urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return urllib.request.build_opener()

    def _http_error(self, e: urllib.error.HTTPError) -> Exception:
        try:
            body = e.read(64 * 1024)
        except Exception:  # noqa: BLE001 - the status is what matters
            body = b""
        finally:
            e.close()
        status = e.code
        if status == 400 and self._json_mode and b"response_format" in body:
            return _NoJsonMode()
        hint = {401: " (check ADVISOR_LLM_API_KEY)", 403: " (check ADVISOR_LLM_API_KEY and the key's access)",
                404: " (check ADVISOR_LLM_URL, e.g. http://host:8080/v1, and ADVISOR_LLM_MODEL)"}.get(status, "")
        excerpt = self._excerpt(body)
        message = (f"the LLM endpoint {_shown(self.endpoint)} answered HTTP {status} {e.reason or ''}".rstrip()
                   + (f": {excerpt}" if excerpt else "") + hint)
        if status == 429 or (status >= 500 and status not in {501, 505}):
            retry_after = e.headers.get("Retry-After") if e.headers else None
            wait = float(retry_after) if retry_after and retry_after.strip().isdigit() else None
            return _Transient(message, min(wait, 10.0) if wait is not None else None)
        return SeedingFailed(message)

    def _excerpt(self, body: bytes) -> str:
        text = " ".join(body.decode("utf-8", errors="replace").split())
        text = self._redact(text)
        return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


class _Transient(Exception):
    """A failure a retry may fix; ``wait`` is the pause before it (None: the seeder's backoff)."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait



class _NoJsonMode(Exception):
    """The server answered 400 to ``response_format``: ask again without it."""


def from_settings(settings) -> LLMSeeder | None:
    """The seeder the settings configure (``ADVISOR_LLM_URL`` and friends), None when no URL is set."""
    url = getattr(settings, "llm_url", None)
    if not url or not str(url).strip():
        return None
    return LLMSeeder(str(url), getattr(settings, "llm_model", None) or "default",
                     _secret(getattr(settings, "llm_api_key", None)),
                     float(getattr(settings, "llm_timeout_s", 60.0) or 60.0))


# --- the prompt ------------------------------------------------------------------------------------------------------


def prompt(space: KnobSpace, features: WorkloadFeatures, n: int) -> str:
    """The user message: machine, workload, the searched knobs, the memory budget and the answer's shape."""
    hw = space.hardware
    f = features.to_dict()
    current = space.default_config()
    budget = space.options.memory_fraction * hw.memory_bytes
    lines = [
        f"Propose {n} different PostgreSQL configurations to try first when tuning this server for its workload.",
        "",
        "Machine:",
        f"- memory: {human_bytes(hw.memory_bytes)} ({hw.memory_bytes} bytes)",
        f"- CPU cores: {hw.cores}",
        f"- storage: {hw.storage}",
        "",
        "Workload (observed from pg_stat_statements):",
        f"- kind: {f.get('kind', 'mixed')}",
        f"- statements: {f.get('statements', 0)} distinct, {f.get('calls', 0)} calls, "
        f"mean {f.get('mean_ms', 0.0):g} ms per call",
        f"- read share (of calls): {f.get('read_share', 0.0):.0%}, write share: {1 - f.get('read_share', 0.0):.0%}",
        f"- share of time in statements that join: {f.get('join_share', 0.0):.0%}",
        f"- share of time in statements that aggregate (GROUP BY, aggregates, DISTINCT): "
        f"{f.get('aggregate_share', 0.0):.0%}",
        f"- share of time in statements that sort (ORDER BY, window functions): {f.get('sort_share', 0.0):.0%}",
        f"- widest join: {f.get('max_relations', 0)} relations in one statement",
        f"- data size: {human_bytes(f.get('data_bytes', 0))} ({f.get('data_bytes', 0)} bytes)",
        "",
        "Knobs you may set (only these; one JSON object per line; 'current' is the server's value now, "
        "'low'..'high' the range searched; 'special' a value with its own meaning, allowed as well; "
        "'restart' means a change needs a server restart):",
    ]
    for d in space.describe():
        entry: dict[str, object] = {"name": d["name"], "current": current.get(d["name"])}
        if d["choices"]:
            entry["choices"] = d["choices"]
        else:
            entry["low"], entry["high"] = d["low"], d["high"]
            unit = _unit_hint(space, d["name"])
            if unit:
                entry["unit"] = unit
            if d["special"] is not None:
                entry["special"] = d["special"]
        entry["restart"] = d["restart"]
        spec = space.catalog.get(d["name"])
        if spec is not None and spec.description:
            entry["description"] = spec.description
        lines.append(json.dumps(entry))
    lines += [
        "",
        f"Memory budget: shared_buffers + wal_buffers + {space.active_connections()} active connections x "
        f"work_mem x hash_mem_multiplier x (1 + max_parallel_workers_per_gather) + autovacuum workers x "
        f"maintenance_work_mem must stay under {human_bytes(budget)} "
        f"({space.options.memory_fraction:.0%} of RAM). Keep min_wal_size <= max_wal_size and "
        f"max_parallel_workers <= max_worker_processes.",
        "",
        f"Make the {n} configurations differ (e.g. a cautious one and bolder ones); leave out knobs whose "
        "current value is already right. Write each value as PostgreSQL accepts it, as text with its unit "
        "where it has one (\"512MB\", \"1.1\", \"on\", \"5min\").",
        f"Answer with only a JSON object of this shape: {ANSWER_SHAPE}",
    ]
    return "\n".join(lines)


def _unit_hint(space: KnobSpace, name: str) -> str | None:
    spec = space.catalog.get(name)
    if spec is None:
        return None
    family, _ = knobvalues.unit_factor(spec.unit)
    if family == "memory":
        return "a size: write it with a unit, e.g. 64MB or 2GB"
    if family == "time":
        return f"{spec.unit} when written without a unit; or give one, e.g. 5min, 200ms"
    return None


# --- reading answers -------------------------------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_REASON_KEYS = ("reason", "reasoning", "rationale", "why", "explanation")
_LIST_KEYS = ("configs", "configurations", "candidates", "seeds")


def configs_of(answer: str) -> list[tuple[dict[str, object], str]]:
    """(knobs, reason) for each configuration of an answer; BadAnswer when there is none. Knob names are
    lower-cased (PostgreSQL's are case-insensitive); values are left for ``sanitize`` to judge."""
    document = _json_in(answer)
    if isinstance(document, list):
        items = document
    elif isinstance(document, dict):
        named = next((k for k in _LIST_KEYS if k in document), None)
        items = document[named] if named else None
        if isinstance(items, dict):  # {"configs": {"cautious": {...}, "bold": {...}}} or one configuration
            items = list(items.values()) if items and all(isinstance(v, dict) for v in items.values()) else [items]
        elif named and not isinstance(items, list):
            raise BadAnswer(f"\"{named}\" must be a list of configurations, not a JSON {type(items).__name__}")
        if items is None:
            lists = [v for v in document.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
            items = lists[0] if len(lists) == 1 else [document]  # a single configuration
    else:
        raise BadAnswer(f"expected a JSON object with \"configs\", got a JSON {type(document).__name__}")
    out: list[tuple[dict[str, object], str]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        knobs = item.get("knobs", item.get("config", item.get("settings")))
        if not isinstance(knobs, dict):
            knobs = {k: v for k, v in item.items() if k not in _REASON_KEYS and not isinstance(v, (dict, list))}
        reason = next((item[k] for k in _REASON_KEYS if isinstance(item.get(k), str)), "")
        cleaned = {str(k).strip().lower(): v for k, v in knobs.items()}
        if cleaned:
            out.append((cleaned, " ".join(str(reason).split())[:500]))
    if not out:
        raise BadAnswer("it has no configuration: expected {\"configs\": [{\"knobs\": {...}}]} with at least one "
                        "knob")
    return out


def _json_in(answer: str):
    """The first JSON object or list in ``answer``: all of it, a fenced block, or one embedded in prose."""
    text = _THINK.sub("", answer or "").strip()
    if not text:
        raise BadAnswer("the answer is empty")
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        for m in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, m.start())
            except ValueError:
                continue
            if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(x, dict) for x in value)):
                return value
    excerpt = " ".join(text.split())
    raise BadAnswer(f"it is not valid JSON: {excerpt[:80]!r}{'...' if len(excerpt) > 80 else ''}")


# --- helpers ---------------------------------------------------------------------------------------------------------


def endpoint(url: str) -> str:
    """The chat completions URL for a base URL: ``<base>/chat/completions``; ``/v1`` added to a bare host."""
    url = url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ValueError(f"the LLM URL must be http(s)://host[:port][/v1], not {_shown(url)!r}")
    if parts.path.endswith("/chat/completions"):
        return url
    path = parts.path or "/v1"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path + "/chat/completions", parts.query, ""))


def _shown(url: str) -> str:
    """A URL fit for a message: no user:password, no query (either may hold a key)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def _secret(key) -> str | None:
    """A plain key from a str or a pydantic SecretStr (this module does not import pydantic)."""
    if key is None:
        return None
    reveal = getattr(key, "get_secret_value", None)
    value = reveal() if callable(reveal) else str(key)
    return value.strip() or None


def _is_timeout(reason) -> bool:
    return isinstance(reason, (TimeoutError, socket.timeout)) or "timed out" in str(reason).lower()


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

