"""A misbehaving LLM endpoint for ``advisor bench faults``: a real HTTP server on 127.0.0.1 that speaks the OpenAI
chat completions protocol and answers from a script (the idea of the LLM seeding tests' server).

Script entries, one per request (the last repeats): a string is the assistant message's content; ``{"sleep": s}``
answers nothing for ``s`` seconds (cut short when the server closes): a hung model; ``{"raw": body}`` is a 200 whose
body is ``body`` (not a chat completion)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedLLM:
    def __init__(self, *script):
        self.script = list(script)
        self.requests = 0
        self.stop = threading.Event()
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                llm.requests += 1
                step = llm.script[min(llm.requests, len(llm.script)) - 1]
                if isinstance(step, str):
                    step = {"content": step}
                if "sleep" in step:
                    llm.stop.wait(step["sleep"])
                    return
                if "raw" in step:
                    return self._send(step["raw"].encode())
                reply = {"id": "fault", "object": "chat.completion", "model": body.get("model", "x"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": step["content"]}}]}
                self._send(json.dumps(reply).encode())

            def _send(self, payload: bytes):
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "ScriptedLLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
