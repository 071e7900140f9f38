"""Issue 42 items 4 and 12 over REST, the UI and schedules: a learned-index run started by a token's holder or a
schedule reads a key file only from the server's ``key_files_dir`` (none by default: key columns and synthetic sets
only); a file outside it, a missing one, a link out of it and a path with ``..`` get the same answer; no answer
quotes a file's content (a run's error, as a viewer reads it, included); a rewrite run's SQL over the caps is a 400
at once."""

from __future__ import annotations

import html
import re
import uuid

import pytest

from tests.web.logins import log_in
from tests.web.test_api import wait_run

RUN = {"kind": "learned-index", "workload": "read-only", "index": "pgm", "budget": 2, "optimizer": "grid",
       "rounds": 1, "validate": False}
SECRET = "8vcD3I8I-TOPSECRET-key-material"


@pytest.fixture(scope="module")
def keys_db(pg):
    return pg.create_database("kf_" + uuid.uuid4().hex[:8])


@pytest.fixture
def server(app_client, tokens, keys_db, tmp_path):
    """(client, service, operator headers, viewer headers, seen): the target ``keys`` registered; ``seen`` every
    response body (the secret is looked for in all of them)."""
    client, service = app_client
    op, viewer = tokens["operator"], tokens["viewer"]
    assert client.post("/api/targets", json={"name": "keys", "dsn": keys_db}, headers=op).status_code == 201
    seen: list[str] = []
    client.event_hooks["response"].append(lambda r: (r.read(), seen.append(r.text)))
    (tmp_path / "outside.txt").write_text(SECRET + "\n")
    yield client, service, op, viewer, seen
    assert not [s for s in seen if "TOPSECRET" in s or "8vcD" in s], "a key file's content appeared in a response"


def start(client, headers, keys: str):
    return client.post("/api/runs", json={"target": "keys", **RUN, "keys": keys}, headers=headers)


def refusal(r, given: str) -> str:
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert "\n" not in message
    return message.replace(repr(given[:80]), "PATH")


def test_without_a_key_files_dir_no_file_is_read_over_rest(server, tmp_path, monkeypatch):
    client, service, op, viewer, _ = server
    monkeypatch.delenv("ADVISOR_KEY_FILES_DIR", raising=False)
    store_key = str(tmp_path / "secret.key")  # the store's encryption key, beside the store
    answers = {refusal(start(client, op, path), path)
               for path in (store_key, str(tmp_path / "outside.txt"), "/etc/shadow", "/proc/self/environ",
                            str(tmp_path / "no-such-file.txt"), "/nonexistent/keys.txt")}
    assert len(answers) == 1, answers  # the same answer whether the file exists or not
    assert "names no key files directory" in answers.pop()
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0


def test_only_the_key_files_dir_is_read_and_links_out_of_it_are_refused(server, tmp_path, monkeypatch):
    client, service, op, viewer, _ = server
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    monkeypatch.setenv("ADVISOR_KEY_FILES_DIR", str(keys_dir))
    (keys_dir / "link.txt").symlink_to(tmp_path / "outside.txt")
    (keys_dir / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    (keys_dir / "sub").symlink_to(tmp_path)
    given = (str(tmp_path / "outside.txt"), str(tmp_path / "missing.txt"), "link.txt", str(keys_dir / "link.txt"),
             "dangling.txt", "sub/outside.txt", str(keys_dir / ".." / "outside.txt"), "../outside.txt",
             str(keys_dir / "missing.txt"), "/etc/shadow")
    answers = {refusal(start(client, op, path), path) for path in given}
    assert len(answers) == 1, answers
    assert "no key file PATH in the server's key files directory" in answers.pop()
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0


def test_a_key_file_in_the_directory_runs_and_its_content_is_never_quoted(server, tmp_path, monkeypatch):
    client, service, op, viewer, seen = server
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    monkeypatch.setenv("ADVISOR_KEY_FILES_DIR", str(keys_dir))
    (keys_dir / "bad.txt").write_text(SECRET + "\n")
    r = start(client, op, "bad.txt")
    assert r.status_code == 202, r.text
    done = wait_run(client, viewer, r.json()["id"], timeout_s=300)
    assert done["state"] == "failed" and "line 1 is not a non-negative integer key" in done["error"], done
    client.get(f"/api/runs/{done['id']}", headers=viewer)
    client.get("/api/runs", headers=viewer)
    (keys_dir / "good.txt").write_text("\n".join(str(7 * i) for i in range(1, 3001)) + "\n")
    r = start(client, op, "good.txt")
    assert r.status_code == 202, r.text
    assert service.run(r.json()["id"])["options"]["plan"]["keys"] == str((keys_dir / "good.txt").resolve())
    done = wait_run(client, viewer, r.json()["id"], timeout_s=300)
    assert done["state"] == "done", done


def test_an_oversize_sosd_file_in_the_directory_is_refused_before_the_run_is_queued(server, tmp_path, monkeypatch):
    import numpy as np

    from advisor.tuning.learned_index.keys import MAX_KEYS

    client, service, op, viewer, _ = server
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    monkeypatch.setenv("ADVISOR_KEY_FILES_DIR", str(keys_dir))
    count = 3 * MAX_KEYS  # a SOSD file of 6M keys (48 MB, under the size cap), its keys never written (sparse)
    with open(keys_dir / "big_uint64", "wb") as f:
        f.write(np.array([count], "<u8").tobytes())
        f.truncate(8 + 8 * count)
    r = start(client, op, "big_uint64")
    assert r.status_code == 400 and f"holds {count:,} keys; at most {MAX_KEYS:,}" in r.json()["message"], r.text
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0


def test_schedules_and_the_run_form_take_the_same_rule(server, tmp_path, monkeypatch):
    client, service, op, viewer, _ = server
    monkeypatch.delenv("ADVISOR_KEY_FILES_DIR", raising=False)
    outside = str(tmp_path / "outside.txt")
    r = client.post("/api/schedules", json={"target": "keys", "cron": "0 2 * * *",
                                            "runs": [{**RUN, "keys": outside}]}, headers=op)
    assert r.status_code == 400 and "names no key files directory" in r.json()["message"], r.text
    assert client.get("/api/schedules", headers=op).json()["items"] == []
    assert log_in(client, op["Authorization"].split()[1]).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/runs").text).group(1)
    form = {"target": "keys", "csrf": csrf, **{k: str(v) for k, v in RUN.items()}, "keys": outside}
    r = client.post("/runs", data=form, follow_redirects=False)
    assert r.status_code == 400 and "names no key files directory" in html.unescape(r.text)
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0


def test_a_100000_statement_rewrite_request_is_refused_at_once(server):
    client, service, op, viewer, _ = server
    body = {"target": "keys", "kind": "rewrites", "optimizer": "greedy"}
    r = client.post("/api/runs", json={**body, "sql": "SELECT 1;" * 100_000}, headers=op)
    assert r.status_code in (400, 413) and "sql holds 900,000 characters; at most" in r.json()["message"], r.text
    r = client.post("/api/runs", json={**body, "sql": "SELECT 1;" * 1001}, headers=op)
    assert r.status_code == 400 and "holds 1,001 statements; a rewrite run takes at most 1,000" in \
        r.json()["message"], r.text
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0


@pytest.mark.parametrize("sql", ["", "  \n\t ", "-- nothing here;\n/* nor here */"])
def test_a_rewrite_request_with_no_sql_is_refused_not_run_on_the_workload(server, sql):
    """Issue 44, item 7: given SQL that is blank or only comments never means "the workload's heaviest"
    (leaving sql out does): refused at once, in one line, no run started."""
    client, service, op, viewer, _ = server
    r = client.post("/api/runs", json={"target": "keys", "kind": "rewrites", "optimizer": "greedy", "sql": sql},
                    headers=op)
    message = r.json()["message"]
    assert r.status_code in (400, 422) and "\n" not in message, r.text
    assert message in ("rewrites.sql: holds no text: leave it out for its default",
                       "no SQL statement in the text given"), message
    assert client.get("/api/runs", headers=viewer).json()["total"] == 0
