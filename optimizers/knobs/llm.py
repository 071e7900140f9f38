"""An LLM that proposes the first knob configurations of a search (LLMTune-style): the seeder (``LLMSeeder``,
``from_settings``) over any OpenAI-compatible chat completions server (vLLM, llama.cpp, Ollama, OpenAI) through the
official ``openai`` SDK, the answer's JSON schema (``answer_schema``), the prompt and the reading of answers.

The prompt gives the workload, the hardware and the searched knobs; the model answers ``{"configs": [{"knobs":
{name: value}, "reason": "..."}]}``, constrained by ``answer_schema`` (the space's knob names are its only
properties, so a server that honours it cannot invent a knob). A server that rejects ``response_format`` (HTTP 400
naming it) is asked once more without it, the JSON asked for in the prompt only. Answers are read defensively
(fences, prose, bare lists) and every configuration goes through ``seeding.sanitize``. The SDK times each request
out and retries 408/409/429/5xx, timeouts and lost connections; an unusable answer is asked again with what was
wrong. Failures raise ``SeedingFailed`` saying which, never with the API key.

>>> endpoint("http://127.0.0.1:8080/v1"), endpoint("http://127.0.0.1:8000")
('http://127.0.0.1:8080/v1/chat/completions', 'http://127.0.0.1:8000/v1/chat/completions')
>>> configs_of('Sure! ```json\\n{"configs": [{"knobs": {"work_mem": "64MB"}, "reason": "sorts"}]}\\n```')
[({'work_mem': '64MB'}, 'sorts')]
>>> configs_of('[{"Random_Page_Cost": 1.1}]')
[({'random_page_cost': 1.1}, '')]
>>> configs_of('{"configs": {"cautious": {"knobs": {"jit": "off", "work_mem": null}}, "bold": {"jit": "on"}}}')
[({'jit': 'off'}, ''), ({'jit': 'on'}, '')]
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

import openai

from optimizers.knobs.features import WorkloadFeatures
from optimizers.knobs.seeding import Seed, SeedingFailed, sanitize
from optimizers.knobs.llm_prompt import ANSWER_SHAPE, BadAnswer, answer_schema, configs_of, prompt, system
from optimizers.knobs.space import KnobSpace

EXCERPT = 200  # characters of a body or an answer quoted in a message
SCHEMA_NAME = "knob_configs"


class LLMSeeder:
    """Seeds from an OpenAI-compatible chat completions endpoint.

    ``url`` is a base URL as servers document it (``http://127.0.0.1:8080/v1``, ``https://api.openai.com/v1``);
    a full ``.../chat/completions`` URL is used as it is. ``timeout_s`` bounds each request; ``retries`` is how
    many more requests the SDK may make after a 5xx/429, a timeout or a connection error, and how many more
    times the model is asked after an unusable answer."""

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
        messages = [{"role": "system", "content": system(space)}, {"role": "user", "content": prompt(space, features, n)}]
        schema = answer_schema(space)
        notes: list[str] = []
        problem = "no answer"
        with self._client(notes, source) as client:
            for attempt in range(self.retries + 1):
                answer, finish = self._complete(client, messages, schema, notes, source)
                try:
                    seeds, warnings = self._seeds_of(space, answer, source, n)
                    return seeds, [self._redact(w) for w in notes + warnings]
                except BadAnswer as e:
                    why = str(e)
                    if finish == "length":
                        why += " (the answer was cut off at the length limit: write shorter reasons)"
                    problem = f"unusable answer: {why}"
                    if attempt == self.retries:
                        break
                    notes.append(f"{source}: {problem}; asking again")
                    messages = [*messages, {"role": "assistant", "content": answer[:4000]},
                                {"role": "user", "content": f"That answer could not be used: {why}. Answer again "
                                                            f"with only a JSON object of this shape: {ANSWER_SHAPE}, "
                                                            f"using only the knob names listed before."}]
        raise self._failed(f"LLM {self.model!r} at {_shown(self.endpoint)} gave no usable seeds after "
                           f"{self.retries + 1} request{'s' if self.retries else ''}: {problem}")

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

    # --- transport (the openai SDK) ----------------------------------------------------------------------------------

    def _client(self, notes: list[str], source: str) -> openai.OpenAI:
        """An SDK client for one seeding step; its hooks note each failed attempt that the SDK retries. A server on
        this machine (a local llama.cpp/vLLM) is reached without the environment's proxy."""
        where, attempts = _shown(self.endpoint), []

        def sent(_request) -> None:  # a request after a failed attempt is the SDK's retry of it
            if attempts and attempts[-1] != "ok":
                lost = f"no answer from {where} within {self.timeout_s:g} s, or the connection failed"
                notes.append(f"{source}: {attempts[-1] or lost}; retrying")
            attempts.append(None)

        def answered(response) -> None:
            attempts[-1] = "ok"
            if response.status_code in {408, 409, 429} or response.status_code >= 500:  # what the SDK retries
                response.read()
                attempts[-1] = self._status_message(response)

        parts = urllib.parse.urlsplit(self.endpoint.removesuffix("/chat/completions"))
        try:
            http = openai.DefaultHttpxClient(trust_env=not _loopback(parts.hostname or ""),
                                             event_hooks={"request": [sent], "response": [answered]})
            return openai.OpenAI(base_url=urllib.parse.urlunsplit((*parts[:3], "", "")),
                                 api_key=self._api_key or "none", timeout=self.timeout_s, max_retries=self.retries,
                                 default_query=dict(urllib.parse.parse_qsl(parts.query)) or None, http_client=http)
        except (openai.OpenAIError, ValueError, TypeError) as e:  # e.g. a malformed proxy in the environment
            raise self._failed(f"cannot set up the LLM client for {where}: {type(e).__name__}: {e}") from None

    def _complete(self, client: openai.OpenAI, messages: list[dict], schema: dict, notes: list[str],
                  source: str) -> tuple[str, str | None]:
        """The content and finish_reason of the first choice; SeedingFailed once the SDK has given up."""
        request: dict = {"model": self.model, "messages": messages, "temperature": 0.2}
        if not self._api_key:  # no key: no Authorization header at all
            request["extra_headers"] = {"Authorization": openai.Omit()}
        if self._json_mode:
            request["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True}}
        failure, raw = None, None  # raised outside the except blocks: no SDK error (it may quote the key) as context
        try:
            try:
                raw = client.chat.completions.with_raw_response.create(**request)
            except openai.APIStatusError as e:
                if not (self._json_mode and _rejects_response_format(e)):
                    raise
                notes.append(f"{source}: {_shown(self.endpoint)} does not take a JSON schema (response_format); "
                             f"asking for JSON in the prompt only")
                self._json_mode = False
                del request["response_format"]
                raw = client.chat.completions.with_raw_response.create(**request)
            choice = raw.parse().choices[0]
            content, finish = choice.message.content, choice.finish_reason
        except Exception as e:  # noqa: BLE001 - an SDK error, or (with an answer) a body that is not a chat completion
            failure = self._failure(e, raw)
        if failure is not None:
            raise failure
        return (content if isinstance(content, str) else ""), finish  # a refusal or a tool call: asked again

    def _failure(self, e: Exception, raw) -> SeedingFailed:
        """SeedingFailed saying what went wrong with the endpoint, and what to check."""
        where = _shown(self.endpoint)
        if raw is not None:
            return self._failed(f"{where} did not answer like a chat completions endpoint (expected "
                                f"{{\"choices\": [{{\"message\": ...}}]}}): {self._excerpt(raw.http_response.text)!r}")
        if isinstance(e, openai.APITimeoutError):
            return self._failed(f"{where} did not answer within {self.timeout_s:g} s (timeout; ADVISOR_LLM_TIMEOUT_S)")
        if isinstance(e, openai.APIStatusError):
            return self._failed(self._status_message(e.response))
        causes = [e]
        while (cause := causes[-1].__cause__ or causes[-1].__context__) is not None and len(causes) < 10:
            causes.append(cause)
        text = " ".join(str(c) for c in causes).lower()
        if any(isinstance(c, ConnectionRefusedError) for c in causes) or "refused" in text:
            return self._failed(f"cannot connect to the LLM endpoint {where}: connection refused "
                                f"(is the server running? check ADVISOR_LLM_URL)")
        if any(isinstance(c, socket.gaierror) for c in causes) or "name or service not known" in text:
            return self._failed(f"cannot resolve the LLM endpoint's host in {where}")
        return self._failed(f"cannot reach the LLM endpoint {where}: {type(causes[-1]).__name__}: {causes[-1]}"
                            if isinstance(e, openai.APIConnectionError) else
                            f"the LLM client failed for {where}: {type(e).__name__}: {e}")

    def _status_message(self, response) -> str:
        status = response.status_code
        hint = {401: " (check ADVISOR_LLM_API_KEY)", 403: " (check ADVISOR_LLM_API_KEY and the key's access)",
                404: " (check ADVISOR_LLM_URL, e.g. http://host:8080/v1, and ADVISOR_LLM_MODEL)"}.get(status, "")
        excerpt = self._excerpt(response.text)
        return (f"the LLM endpoint {_shown(self.endpoint)} answered HTTP {status} {response.reason_phrase or ''}"
                .rstrip() + (f": {excerpt}" if excerpt else "") + hint)

    def _failed(self, message: str) -> SeedingFailed:
        return SeedingFailed(self._redact(message))

    def _excerpt(self, text: str) -> str:
        text = self._redact(" ".join((text or "").split()))
        return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


def _rejects_response_format(e: openai.APIStatusError) -> bool:
    """A 400 (422 on some servers) that names response_format or json_schema: structured output not taken."""
    text = f"{e.message} {e.response.text}".lower()
    return e.status_code in {400, 422} and ("response_format" in text or "json_schema" in text)


def from_settings(settings) -> LLMSeeder | None:
    """The seeder the settings configure (``ADVISOR_LLM_URL`` and friends), None when no URL is set."""
    url = getattr(settings, "llm_url", None)
    if not url or not str(url).strip():
        return None
    return LLMSeeder(str(url), getattr(settings, "llm_model", None) or "default",
                     _secret(getattr(settings, "llm_api_key", None)),
                     float(getattr(settings, "llm_timeout_s", 60.0) or 60.0))


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
        host, port = parts.hostname or "", f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    host = f"[{host}]" if ":" in host else host
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def _secret(key) -> str | None:
    """A plain key from a str or a pydantic SecretStr (this module does not import pydantic)."""
    reveal = getattr(key, "get_secret_value", None)
    value = reveal() if callable(reveal) else "" if key is None else str(key)
    return value.strip() or None


def _loopback(host: str) -> bool:
    try:
        return host.lower() == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

