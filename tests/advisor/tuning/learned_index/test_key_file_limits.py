"""Issue 42 item 12: a key file is checked against the caps before its keys are read (at most ``MAX_KEYS`` keys,
the cap of a key column; at most ``MAX_KEY_FILE_BYTES``): a SOSD file by its header's count, a text file line by
line, stopped at the first key past the cap; a rewrite run's SQL is capped in length and in statements, refused
before any of it is checked. Messages are one line and never quote a file's content."""

from __future__ import annotations

import os

import numpy as np
import pytest

from advisor.core.errors import AdvisorError
from advisor.tuning.learned_index import keys as key_sources
from advisor.tuning import kinds
from advisor.tuning.rewrites.plan import SQL_MAX, RewritesPlan
from advisor.tuning.rewrites.given import MAX_STATEMENTS, statements


def sosd_header(path, count: int, size: int) -> None:
    """A SOSD file whose header says ``count`` keys, ``size`` bytes long (sparse: nothing but the header written)."""
    with open(path, "wb") as f:
        f.write(np.array([count], "<u8").tobytes())
        f.truncate(size)


def test_the_key_cap_is_the_column_cap():
    assert key_sources.MAX_KEYS == 2_000_000  # a column gives at most MAX_KEYS distinct values (connector.column_keys)


def test_an_oversize_sosd_header_is_refused_before_its_keys_are_read(tmp_path):
    path = tmp_path / "big_uint64"
    count = key_sources.MAX_KEYS + 1
    sosd_header(path, count, 8 + 8 * count)  # all zeros past the header: read whole, it would be one distinct key
    for check in (key_sources.check, key_sources.read):
        with pytest.raises(AdvisorError) as e:
            check(str(path))
        assert f"holds {count:,} keys; at most {key_sources.MAX_KEYS:,}" in e.value.message, e.value.message
        assert "\n" not in e.value.message


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path):
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:
        f.write(b"1\n")
        f.truncate(key_sources.MAX_KEY_FILE_BYTES + 1)
    for check in (key_sources.check, key_sources.read):
        with pytest.raises(AdvisorError, match=f"at most {key_sources.MAX_KEY_FILE_BYTES:,} are read"):
            check(str(path))


def test_a_text_file_is_read_no_further_than_the_cap(tmp_path):
    """A text file with one key more than the cap and then a broken line: refused for the count, so the broken line
    past the cap is never read (read whole, it would be refused for that line)."""
    path = tmp_path / "many.txt"
    with open(path, "w") as f:
        f.write("\n".join(map(str, range(1, key_sources.MAX_KEYS + 2))) + "\nSECRET-LINE\n")
    with pytest.raises(AdvisorError) as e:
        key_sources.read(str(path))
    assert f"more than {key_sources.MAX_KEYS:,} keys" in e.value.message and "SECRET" not in e.value.message


def test_a_file_at_the_cap_is_read(tmp_path):
    path = tmp_path / "ok_uint64"
    keys = np.arange(1, 5001, dtype="<u8") * 7
    path.write_bytes(np.array([len(keys)], "<u8").tobytes() + keys.tobytes())
    assert key_sources.read(str(path)).tolist() == keys.tolist()


def test_a_key_files_content_is_never_quoted(tmp_path):
    path = tmp_path / "secret.key"
    path.write_text("8vcD3I8I-not-a-key-TOPSECRET\n")
    for check in (key_sources.read, ):
        with pytest.raises(AdvisorError) as e:
            check(str(path))
        assert "line 1 is not a non-negative integer key" in e.value.message
        assert "TOPSECRET" not in e.value.message and "8vcD" not in e.value.message


def test_a_special_file_is_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(AdvisorError, match="does not exist or is not a file"):
        key_sources.check(str(fifo))


def test_rewrite_sql_is_capped_before_it_is_read():
    with pytest.raises(AdvisorError) as e:
        kinds.parse_plan({"kind": "rewrites", "sql": "SELECT 1;" * 100_000})
    assert e.value.message == f"sql holds 900,000 characters; at most {SQL_MAX:,} are taken"
    with pytest.raises(AdvisorError, match=f"holds {MAX_STATEMENTS + 1:,} statements; a rewrite run takes at most"):
        statements("SELECT 1;" * (MAX_STATEMENTS + 1), "postgres")
    assert len(statements("SELECT 1;" * MAX_STATEMENTS, "postgres")) == MAX_STATEMENTS
    assert MAX_STATEMENTS == RewritesPlan.options()["max_statements"].bounds[1]  # as many as a run may rewrite
