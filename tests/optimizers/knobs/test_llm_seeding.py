"""The LLM seeder (the openai SDK) against a scripted chat completions server on 127.0.0.1, over a real server's
knob catalog."""

from __future__ import annotations

import json
import socket
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from advisor.core.domain import Hardware
from advisor.core.settings import Settings
from connectors.postgres import PostgresConnector
from optimizers.knobs import llm, seeding
from optimizers.knobs.features import WorkloadFeatures
from optimizers.knobs.llm import LLMSeeder
from optimizers.knobs.seeding import SeedingFailed
from optimizers.knobs.space import KnobSpace

GB = 1024**3
KEY = "sk-test-0123456789abcdef"
FEATURES = WorkloadFeatures(statements=12, calls=5000, read_share=0.9, join_share=0.7, aggregate_share=0.6,
                            sort_share=0.3, max_relations=7, mean_ms=250.0, data_bytes=2 * GB, kind="olap")


class FakeLLM:
    """A chat completions server that answers from a script and records what it was asked. Each script entry is
    a string (the message content), or a dict: ``status``+``body`` for an HTTP error (sent with ``retry-after-ms:
    10``, so the SDK's retries wait 10 ms), ``sleep`` seconds before answering ``content`` (cut short when the
    server closes), ``raw`` for a 200 with that body. The last entry repeats."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[dict] = []
        self.stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                # headers as the HTTP message: looked up case-insensitively (the SDK sends lower-case names)
                fake.requests.append({"path": self.path, "headers": self.headers, "body": json.loads(body)})
                step = fake.script[min(len(fake.requests), len(fake.script)) - 1]
                if isinstance(step, str):
                    step = {"content": step}
                if step.get("sleep") and fake.stop.wait(step["sleep"]):
                    return
                if "status" in step:
                    self._send(step["status"], step.get("body", "").encode(), {"retry-after-ms": "10"})
                elif "raw" in step:
                    self._send(200, step["raw"].encode())
                else:
                    reply = {"id": "x", "object": "chat.completion", "model": fake.requests[-1]["body"]["model"],
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": step["content"]}}]}
                    self._send(200, json.dumps(reply).encode())

            def _send(self, status, payload, headers=None):
                try:
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def seeder(self, **kw) -> LLMSeeder:
        kw.setdefault("api_key", KEY)
        return LLMSeeder(self.url, kw.pop("model", "test-model"), **kw)

    def close(self):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    servers: list[FakeLLM] = []

    def start(*script):
        server = FakeLLM(*script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="module")
def space(pg):
    connector = PostgresConnector(pg.dsn())
    return KnobSpace.build(connector.knob_catalog(), Hardware(8 * GB, 4, "ssd"), connector.knob_profile())


def answer(*configs) -> str:
    return json.dumps({"configs": [{"knobs": knobs, "reason": f"reason {i}"} for i, knobs in enumerate(configs)]})


def mb(space, config, name) -> float:
    return space.units.to_bytes(space.catalog[name], config[name]) / 1024**2


GOOD = answer({"shared_buffers": "2GB", "work_mem": "32MB", "random_page_cost": "1.1", "jit": "off"},
              {"shared_buffers": "1GB", "effective_cache_size": "6GB", "max_parallel_workers_per_gather": 4})


def test_a_good_answer_gives_seeds_with_its_values(fake, space):
    server = fake(GOOD)
    seeds, warnings = server.seeder().seeds(space, FEATURES, 2)
    assert [s.source for s in seeds] == ["llm:test-model", "llm:test-model"]
    first, second = (s.config for s in seeds)
    assert mb(space, first, "shared_buffers") == 2048 and mb(space, first, "work_mem") == 32
    assert first["random_page_cost"] == "1.1" and first["jit"] == "off"
    assert mb(space, second, "effective_cache_size") == 6144 and second["max_parallel_workers_per_gather"] == "4"
    assert seeds[0].reason == "reason 0" and warnings == []
    assert all(space.violations(s.config) == [] for s in seeds)


def test_the_request_carries_model_key_features_and_knobs(fake, space):
    server = fake(GOOD)
    server.seeder(model="qwen2.5-7b").seeds(space, FEATURES, 3)
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "qwen2.5-7b" and body["temperature"] == 0.2
    assert body["response_format"]["type"] == "json_schema"
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert "Propose 3 different" in text and '"configs"' in text
    assert "read share (of calls): 90%" in text and "join: 70%" in text and "aggregates, DISTINCT): 60%" in text
    assert "widest join: 7 relations" in text and "data size: 2.0GB" in text and "kind: olap" in text
    assert "memory: 8.0GB" in text and "CPU cores: 4" in text and "storage: ssd" in text
    knob_lines = [json.loads(line) for line in text.splitlines() if line.startswith('{"name"')]
    assert [k["name"] for k in knob_lines] == space.names
    sb = next(k for k in knob_lines if k["name"] == "shared_buffers")
    assert sb["current"] == space.default_config()["shared_buffers"] and sb["restart"] is True
    assert sb["low"] == "16MB" and sb["description"] == space.catalog["shared_buffers"].description
    assert "fsync" not in {k["name"] for k in knob_lines}


def test_no_key_no_authorization_header(fake, space):
    server = fake(GOOD)
    server.seeder(api_key=None).seeds(space, FEATURES, 1)
    assert "Authorization" not in server.requests[0]["headers"]


def knob_schema(request) -> dict:
    response_format = request["body"]["response_format"]
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert schema["required"] == ["configs"] and schema["additionalProperties"] is False
    config = schema["properties"]["configs"]["items"]
    assert set(config["required"]) == {"knobs", "reason"} and config["additionalProperties"] is False
    return config["properties"]["knobs"]


def test_the_request_asks_for_output_constrained_to_the_space_knobs(fake, space):
    server = fake(GOOD)
    server.seeder().seeds(space, FEATURES, 2)
    knobs = knob_schema(server.requests[0])
    assert list(knobs["properties"]) == space.names  # exactly the searched knobs, nothing to invent
    assert knobs["additionalProperties"] is False and knobs["required"] == space.names  # strict: null = as is
    assert "fsync" not in knobs["properties"] and "turbo_mode" not in knobs["properties"]
    typed = {name: [t for t in v["anyOf"] if t["type"] != "null"][0] for name, v in knobs["properties"].items()}
    assert all({"type": "null"} in v["anyOf"] for v in knobs["properties"].values())
    assert typed["jit"] == {"type": "string", "enum": ["off", "on"]}
    assert typed["random_page_cost"] == {"type": "number"} and typed["join_collapse_limit"] == {"type": "integer"}
    assert typed["shared_buffers"] == {"type": "string"}  # a size, with its unit


def test_an_answer_with_every_knob_null_but_some_gives_just_those(fake, space):
    knobs = dict.fromkeys(space.names) | {"work_mem": "32MB", "jit": "off"}
    server = fake(json.dumps({"configs": [{"knobs": knobs, "reason": "only two"}]}))
    (seed,), warnings = server.seeder().seeds(space, FEATURES, 1)
    assert seed.config == {"work_mem": "32MB", "jit": "off"} and warnings == []


def test_invented_and_unsearched_knobs_are_dropped_with_warnings(fake, space):
    server = fake(answer({"turbo_mode": "on", "fsync": "off", "Work_Mem": "64MB", "random_page_cost": 1.5}))
    (seed,), warnings = server.seeder().seeds(space, FEATURES, 3)
    assert seed.config == {"work_mem": "64MB", "random_page_cost": "1.5"}
    assert any("'turbo_mode'" in w and "not a setting of this server" in w for w in warnings)
    assert any("'fsync'" in w and "not in the searched space" in w for w in warnings)


def test_out_of_range_values_are_clamped_or_dropped(fake, space):
    server = fake(answer({"shared_buffers": "500GB", "random_page_cost": -3, "work_mem": "lots",
                          "jit": "maybe", "effective_cache_size": "4GB"}))
    (seed,), warnings = server.seeder().seeds(space, FEATURES, 1)
    dims = {d["name"]: d for d in space.describe()}
    assert seed.config["shared_buffers"] == dims["shared_buffers"]["high"]  # 40% of RAM
    assert mb(space, seed.config, "shared_buffers") <= 0.4 * 8 * 1024 + 1  # rounded to a whole MB
    assert seed.config["random_page_cost"] == "1"
    assert "jit" not in seed.config and "effective_cache_size" in seed.config
    assert any("shared_buffers = 500GB moved into the searched range" in w for w in warnings)
    assert any("dropped jit" in w for w in warnings)
    assert any("dropped work_mem" in w for w in warnings) or mb(space, seed.config, "work_mem") < 64


def test_a_configuration_with_nothing_usable_is_skipped(fake, space):
    server = fake(answer({"turbo_mode": "on"}, {"work_mem": "16MB"}))
    seeds, warnings = server.seeder().seeds(space, FEATURES, 3)
    assert [s.config for s in seeds] == [{"work_mem": "16MB"}]
    assert any("configuration 1 of the answer skipped" in w for w in warnings)


def test_markdown_fences_prose_and_bare_lists_are_accepted(fake, space):
    fenced = "Here you go:\n```json\n" + answer({"work_mem": "48MB"}) + "\n```\nHope it helps."
    bare = '<think>memory first</think> [{"knobs": {"work_mem": "24MB"}, "reason": "x"}, {"random_page_cost": 2}]'
    server = fake(fenced, bare)
    seeder = server.seeder()
    assert seeder.seeds(space, FEATURES, 3)[0][0].config == {"work_mem": "48MB"}
    seeds, _ = seeder.seeds(space, FEATURES, 3)
    assert [s.config for s in seeds] == [{"work_mem": "24MB"}, {"random_page_cost": "2"}]


def test_invalid_json_is_retried_with_what_was_wrong(fake, space):
    server = fake("I would raise shared_buffers to 2GB.", answer({"work_mem": "32MB"}))
    (seed,), warnings = server.seeder().seeds(space, FEATURES, 1)
    assert seed.config == {"work_mem": "32MB"} and len(server.requests) == 2
    retry = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "not valid JSON" in retry[-1]["content"] and '"configs"' in retry[-1]["content"]
    assert any("asking again" in w for w in warnings)


def test_always_invalid_fails_after_the_retries(fake, space):
    server = fake("no JSON here")
    with pytest.raises(SeedingFailed, match="no usable seeds after 3 requests: unusable answer: it is not valid JSON"):
        server.seeder(retries=2).seeds(space, FEATURES, 1)
    assert len(server.requests) == 3


def test_wrong_shape_and_only_unknown_knobs_fail_with_the_reason(fake, space):
    server = fake('{"configs": "none"}')
    with pytest.raises(SeedingFailed, match='"configs" must be a list of configurations, not a JSON str'):
        server.seeder(retries=0).seeds(space, FEATURES, 1)
    server = fake(answer({"turbo_mode": "on"}))
    with pytest.raises(SeedingFailed, match="has a usable knob.*turbo_mode"):
        server.seeder(retries=1).seeds(space, FEATURES, 1)
    assert len(server.requests) == 2


def test_http_500_is_retried(fake, space):
    server = fake({"status": 500, "body": "model is loading"}, GOOD)
    seeds, warnings = server.seeder().seeds(space, FEATURES, 2)
    assert len(seeds) == 2 and len(server.requests) == 2
    assert any("HTTP 500" in w and "model is loading" in w for w in warnings)


def test_http_500_every_time_fails_with_status_and_body(fake, space):
    server = fake({"status": 503, "body": "overloaded " * 100})
    with pytest.raises(SeedingFailed, match=r"HTTP 503 .*overloaded") as e:
        server.seeder(retries=1).seeds(space, FEATURES, 1)
    assert len(server.requests) == 2 and len(str(e.value)) < 500


def test_http_401_fails_at_once_without_the_key(fake, space):
    server = fake({"status": 401, "body": json.dumps({"error": f"Incorrect API key provided: {KEY}"})})
    with pytest.raises(SeedingFailed, match="401") as e:
        server.seeder().seeds(space, FEATURES, 1)
    assert len(server.requests) == 1
    assert KEY not in str(e.value) and "ADVISOR_LLM_API_KEY" in str(e.value)
    assert KEY not in repr(server.seeder())


def test_http_404_is_not_retried(fake, space):
    server = fake({"status": 404, "body": "not found"})
    with pytest.raises(SeedingFailed, match="HTTP 404.*ADVISOR_LLM_URL"):
        server.seeder().seeds(space, FEATURES, 1)
    assert len(server.requests) == 1


def test_a_server_that_rejects_response_format_is_asked_without_it(fake, space):
    server = fake({"status": 400, "body": '{"error": "response_format is not supported"}'}, GOOD)
    seeds, _ = server.seeder(retries=0).seeds(space, FEATURES, 2)
    assert len(seeds) == 2
    assert "response_format" in server.requests[0]["body"] and "response_format" not in server.requests[1]["body"]


def test_a_server_that_rejects_json_schema_is_asked_once_without_it_and_remembers(fake, space):
    rejected = {"status": 400, "body": json.dumps({"error": {"message": "Unsupported value: 'json_schema'",
                                                              "param": "response_format.type"}})}
    server = fake(rejected, GOOD)
    seeder = server.seeder()
    seeds, warnings = seeder.seeds(space, FEATURES, 2)
    assert len(seeds) == 2 and len(server.requests) == 2
    assert "response_format" in server.requests[0]["body"] and "response_format" not in server.requests[1]["body"]
    assert server.requests[1]["body"]["messages"] == server.requests[0]["body"]["messages"]  # JSON by prompt
    assert any("JSON in the prompt only" in w for w in warnings)
    seeder.seeds(space, FEATURES, 2)  # the same seeder does not ask for the schema again
    assert len(server.requests) == 3 and "response_format" not in server.requests[2]["body"]


def test_the_fallback_happens_once_and_other_400s_do_not_fall_back(fake, space):
    server = fake({"status": 400, "body": "response_format is not supported"})
    with pytest.raises(SeedingFailed, match="HTTP 400 .*response_format is not supported"):
        server.seeder().seeds(space, FEATURES, 1)
    assert len(server.requests) == 2  # with the schema, then once without; a 400 is not retried
    server = fake({"status": 400, "body": "model 'x' does not exist"})
    with pytest.raises(SeedingFailed, match="HTTP 400 .*does not exist"):
        server.seeder().seeds(space, FEATURES, 1)
    assert len(server.requests) == 1 and "response_format" in server.requests[0]["body"]


def test_a_non_chat_answer_fails_clearly(fake, space):
    server = fake({"raw": "<html>hello</html>"})
    with pytest.raises(SeedingFailed, match="did not answer like a chat completions endpoint.*html"):
        server.seeder().seeds(space, FEATURES, 1)


def test_a_slow_server_times_out(fake, space):
    server = fake({"sleep": 60, "content": GOOD})
    with pytest.raises(SeedingFailed, match=r"did not answer within 0.3 s \(timeout"):
        server.seeder(timeout_s=0.3, retries=1).seeds(space, FEATURES, 1)
    assert len(server.requests) == 2  # a timeout is retried


def test_a_hanging_server_times_out_with_a_clear_error(fake, space):
    server = fake({"sleep": 60, "content": GOOD})  # answers only when the test closes it
    warnings: list[str] = []
    with pytest.raises(SeedingFailed, match=r"did not answer within 0.5 s \(timeout; ADVISOR_LLM_TIMEOUT_S\)"):
        server.seeder(timeout_s=0.5, retries=0).seeds(space, FEATURES, 1)
    assert len(server.requests) == 1
    seeds = seeding.seeds_for(space, FEATURES, llm=server.seeder(timeout_s=0.5, retries=0), warn=warnings.append)
    assert seeds and any("LLM seeding failed" in w and "timeout" in w for w in warnings)


def test_a_closed_port_is_connection_refused(space):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    seeder = LLMSeeder(f"http://127.0.0.1:{port}/v1", "m", api_key=KEY, retries=2)
    with pytest.raises(SeedingFailed, match="connection refused") as e:
        seeder.seeds(space, FEATURES, 1)
    assert KEY not in str(e.value)


@pytest.mark.parametrize("script", [
    {"status": 401, "body": f"Incorrect API key provided: {KEY}"},
    {"status": 500, "body": f"upstream rejected key {KEY}"},
    {"status": 400, "body": f"bad request from {KEY} (response_format)"},
    {"raw": f"<html>{KEY}</html>"},
    f"no JSON, just the key {KEY}",
    {"sleep": 60, "content": GOOD},
], ids=["401", "500", "400-fallback", "not-chat", "bad-answer", "timeout"])
def test_the_api_key_is_in_no_message(fake, space, script):
    server = fake(script)
    with pytest.raises(SeedingFailed) as e:
        server.seeder(timeout_s=0.5, retries=1).seeds(space, FEATURES, 1)
    shown = "".join(traceback.format_exception(e.value)) + repr(e.value)
    assert KEY not in shown and e.value.__cause__ is None and e.value.__context__ is None
    warnings: list[str] = []
    seeding.seeds_for(space, FEATURES, llm=server.seeder(timeout_s=0.5, retries=1), warn=warnings.append)
    assert warnings and not any(KEY in w for w in warnings)


def test_warnings_of_retried_failures_do_not_carry_the_key(fake, space):
    server = fake({"status": 503, "body": f"key {KEY} is warming up"}, GOOD)
    seeds, warnings = server.seeder().seeds(space, FEATURES, 1)
    assert seeds and any("HTTP 503" in w for w in warnings) and not any(KEY in w for w in warnings)


def test_urls_and_settings(monkeypatch):
    assert llm.endpoint("http://h:8080/v1/") == "http://h:8080/v1/chat/completions"
    assert llm.endpoint("https://api.openai.com/v1/chat/completions") == "https://api.openai.com/v1/chat/completions"
    assert llm.endpoint("http://h:8000") == "http://h:8000/v1/chat/completions"
    with pytest.raises(ValueError):
        LLMSeeder("h:8000", "m")
    assert llm.from_settings(Settings(llm_url=None)) is None
    assert llm.from_settings(Settings(llm_url="  ")) is None
    settings = Settings(llm_url="http://127.0.0.1:9/v1", llm_model="llama", llm_api_key=KEY, llm_timeout_s=5)
    assert KEY not in repr(settings)
    seeder = llm.from_settings(settings)
    assert (seeder.model, seeder.timeout_s, seeder.endpoint) == ("llama", 5.0, "http://127.0.0.1:9/v1/chat/completions")
    assert seeder._api_key == KEY and KEY not in repr(seeder)
    monkeypatch.setenv("ADVISOR_LLM_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("ADVISOR_LLM_API_KEY", KEY)
    monkeypatch.setenv("ADVISOR_LLM_TIMEOUT_S", "7.5")
    from_env = llm.from_settings(Settings())
    assert (from_env.model, from_env.timeout_s, from_env._api_key) == ("default", 7.5, KEY)


# --- through seeding.seeds_for -----------------------------------------------------------------------------------


def test_seeds_for_falls_back_to_the_rules_when_the_llm_fails(fake, space):
    server = fake({"status": 401, "body": "bad key"})
    warnings: list[str] = []
    seeds = seeding.seeds_for(space, FEATURES, llm=server.seeder(), warn=warnings.append)
    assert seeds and all(s.source.startswith(("rules", "workload-rules")) for s in seeds)
    assert any(w.startswith("LLM seeding failed") and "401" in w and KEY not in w for w in warnings)


def test_seeds_for_uses_the_llm_and_caches_its_seeds(fake, space):
    server = fake(GOOD)
    store: dict[str, list[dict]] = {}
    cache = (store.get, store.__setitem__)
    first = seeding.seeds_for(space, FEATURES, n=2, llm=server.seeder(), cache=cache, warn=list().append)
    assert [s.source for s in first] == ["llm:test-model"] * 2 and len(server.requests) == 1
    assert len(store) == 1 and next(iter(store)).startswith("llm:test-model:")
    again = seeding.seeds_for(space, FEATURES, n=2, llm=server.seeder(), cache=cache)
    assert again == first and len(server.requests) == 1
