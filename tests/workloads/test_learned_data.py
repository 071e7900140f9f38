"""Key sets and operation mixes for learned indexes: the synthetic families, SOSD binary and text files (good and
malformed: one line naming the file and the problem), features, mixes by name and by shares, the stream a
workload makes (inserts held out of the initial keys), and drifting phases."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.core.errors import AdvisorError
from connectors.factory import INSERT, LOOKUP, RANGE
from workloads.datasets.learned.keysets import SYNTHETIC, describe, read_keys, synthetic
from workloads.datasets.learned.mixes import MIXES, Mix, drifting, parse_mix, workload


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_key_sets_are_sorted_unique_and_reproducible(name):
    keys = synthetic(name, 5000, seed=3)
    assert keys.dtype == np.uint64 and len(keys) == 5000 and np.all(keys[1:] > keys[:-1])
    assert np.array_equal(keys, synthetic(name, 5000, seed=3))
    assert not np.array_equal(keys, synthetic(name, 5000, seed=4))
    features = describe(keys)
    assert all(np.isfinite(v) for v in features.values())


def test_the_families_differ_in_shape():
    f = {name: describe(synthetic(name, 20_000, seed=1)) for name in SYNTHETIC}
    assert f["uniform"]["linear_r2"] > 0.99 > f["books"]["linear_r2"]
    assert f["fb"]["gap_cv"] > 5 * f["uniform"]["gap_cv"]
    assert f["osm"]["gap_log_std"] > f["uniform"]["gap_log_std"]
    with pytest.raises(AdvisorError, match="unknown key set 'wiki': expected one of books, fb, osm"):
        synthetic("wiki", 10, seed=0)


def test_the_generated_families_have_the_shapes_their_names_say():
    f = {name: describe(synthetic(name, 20_000, seed=2)) for name in SYNTHETIC}
    assert f["bursty"]["burstiness"] > f["uniform"]["burstiness"] + 1  # counts per window far from Poisson
    assert f["bursty"]["gap_q90"] > f["uniform"]["gap_q90"] + 3  # quiet stretches: a long gap tail
    assert f["sequential"]["min_gap_share"] > 0.3 > f["uniform"]["min_gap_share"]  # runs of consecutive ids
    assert f["zipf-clustered"]["min_gap_share"] > 0.2
    for name in ("piecewise", "lognormal", "mixture"):  # curved CDFs: a finer model fits far better
        assert f[name]["cdf_err_1"] > f[name]["cdf_err_256"] + 4 and f[name]["cdf_err_1"] > f["uniform"]["cdf_err_1"]


def test_read_keys_reads_sosd_binary_and_text(tmp_path):
    keys = np.array([5, 1, 9, 1, 2**63], dtype=np.uint64)
    binary = tmp_path / "books_5_uint64"
    binary.write_bytes(np.array([len(keys)], "<u8").tobytes() + keys.astype("<u8").tobytes())
    text = tmp_path / "keys.txt"
    text.write_text("5\n1\n\n9\n1\n9223372036854775808\n")
    expected = [1, 5, 9, 2**63]
    assert read_keys(binary).tolist() == expected and read_keys(str(text)).tolist() == expected


@pytest.mark.parametrize(("content", "problem"), [
    (None, "cannot read the key file"),
    (b"", "the key file is empty"),
    (b"12\n-4\n", "line 2 is not a non-negative integer key"),
    (b"1\n18446744073709551616\n", "line 2: the key does not fit in 64 bits"),
    (b"18446744073709551615\n", "is reserved"),
    (np.array([3], "<u8").tobytes() + b"\x01\x00\xff\xfe\x00\x00\x80\x00" * 2 + b"\xff", "neither SOSD binary"),
])
def test_malformed_key_files_get_one_line_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "bad.keys"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(AdvisorError) as e:
        read_keys(path)
    assert str(path) in str(e.value) and problem in str(e.value) and "\n" not in str(e.value)
    said = str(e.value).replace(str(path), "")  # the path may hold anything (pytest-463 holds "-4")
    assert "-4" not in said and "18446744073709551616" not in said  # never the file's content


def test_mixes_by_name_and_by_shares():
    assert set(MIXES) == {"read-only", "read-heavy", "balanced", "write-heavy"}
    assert parse_mix("Read-Only") == Mix(1.0, 0.0, 0.0)
    assert parse_mix("lookup=0.7,insert=0.2,range=0.1") == Mix(0.7, 0.2, 0.1, 100)
    for bad, text in [("scan-heavy", "unknown mix 'scan-heavy'"), ("lookup=0.5,insert=0.2", "sum to 0.7, not 1"),
                      ("lookup=x,insert=1", "lookup needs a number"), ("lookup=1,delete=0", "unknown part"),
                      ("lookup=1,range_len=0", "range_len must be a whole number"),
                      ("lookup=-0.5,insert=1.5", "must be a non-negative number")]:
        with pytest.raises(AdvisorError, match=text):
            parse_mix(bad)


def test_a_workload_holds_its_inserts_out_of_the_initial_keys():
    keys = synthetic("osm", 20_000, seed=2)
    initial, stream = workload(keys, parse_mix("lookup=0.5,insert=0.3,range=0.2,range_len=7"), 8000, seed=5)
    inserted = stream.keys[stream.ops == INSERT]
    counts = stream.counts()
    assert 2000 < counts["insert"] < 2800 and 1200 < counts["range"] < 2000
    assert len(initial) + len(inserted) == len(keys) and len(np.unique(inserted)) == len(inserted)
    assert not np.isin(inserted, initial).any() and np.all(initial[1:] > initial[:-1])
    assert np.isin(stream.keys[stream.ops != INSERT], initial).all()
    assert set(stream.lengths[stream.ops == RANGE]) == {7} and not stream.lengths[stream.ops != RANGE].any()
    with pytest.raises(AdvisorError, match="more than half of the 20000 keys"):
        workload(keys, parse_mix("write-heavy"), 20_000, seed=5)


def test_drifting_phases_move_the_mix_and_the_keys():
    initial, phases = drifting("uniform", parse_mix("read-only"), parse_mix("write-heavy"), 4, 4000, seed=1)
    shares = [s.counts()["insert"] / len(s) for s in phases]
    assert shares[0] == 0.0 and shares == sorted(shares) and shares[-1] > 0.7
    last = phases[-1].keys[phases[-1].ops == INSERT]
    assert (last > initial[-1]).mean() > 0.5  # the last phase inserts mostly beyond the initial key range
    seen = set(initial.tolist())
    for s in phases:
        ins = s.keys[s.ops == INSERT].tolist()
        assert seen.isdisjoint(ins)
        assert set(s.keys[s.ops == LOOKUP].tolist()) <= seen  # lookups find keys present by then
        seen |= set(ins)
