"""Key sets for learned indexes: sorted unique uint64 arrays.

``synthetic(name, n, seed)`` draws one of ``SYNTHETIC`` (shapes after SOSD's data sets, at any size):
``books`` lognormal (a smooth, strongly curved CDF), ``fb`` heavy-tailed (dense ids with a Pareto tail),
``osm`` clustered (Zipf-sized clusters of cell ids), ``uniform`` and ``normal``.
``read_keys(path)`` reads SOSD's binary format (uint64 count, then the keys, little endian) or text (one
non-negative integer a line); ``describe(keys)`` gives the features a tuner is told about a key set.

>>> k = synthetic("books", 1000, seed=1)
>>> len(k), k.dtype.name, bool((k[1:] > k[:-1]).all())
(1000, 'uint64', True)
>>> sorted(describe(k))[:3]
['gap_cv', 'gap_log_std', 'key_skew']
"""

from __future__ import annotations

import os
import stat

import numpy as np

from advisor.core.errors import InvalidInput

SYNTHETIC = ("books", "fb", "osm", "uniform", "normal")
RESERVED = np.uint64(2**64 - 1)


def _draw(name: str, m: int, rng: np.random.Generator) -> np.ndarray:
    if name == "books":
        return rng.lognormal(0.0, 1.0, m) * 2.0**44
    if name == "fb":
        dense = rng.uniform(0, 2.0**36, m)
        tail = (rng.pareto(1.1, m) + 1.0) * 2.0**36
        return np.where(rng.random(m) < 0.98, dense, np.minimum(tail, 2.0**62))
    if name == "osm":
        k = max(8, m // 500)
        centers = rng.uniform(0, 2.0**62, k)
        sizes = rng.zipf(1.6, k).astype(float)
        which = rng.choice(k, m, p=sizes / sizes.sum())
        spread = rng.uniform(2.0**20, 2.0**34, k)
        return centers[which] + rng.normal(0, 1, m) * spread[which]
    if name == "uniform":
        return rng.uniform(0, 2.0**60, m)
    return rng.normal(2.0**59, 2.0**55, m)


def synthetic(name: str, n: int, seed: int) -> np.ndarray:
    """``n`` sorted unique uint64 keys of the family ``name`` (InvalidInput for an unknown family)."""
    if name not in SYNTHETIC:
        raise InvalidInput(f"unknown key set {name!r}: expected one of {', '.join(SYNTHETIC)} or a file")
    if n < 1:
        raise InvalidInput(f"a key set needs at least one key (got {n})")
    rng = np.random.default_rng(seed)
    keys = np.empty(0, np.uint64)
    while len(keys) < n:
        raw = _draw(name, 2 * (n - len(keys)) + 16, rng)
        raw = np.clip(raw, 0, 2.0**63)
        keys = np.unique(np.concatenate([keys, raw.astype(np.uint64)]))
    return np.sort(rng.choice(keys, n, replace=False))


def read_keys(path, max_keys: int | None = None, max_bytes: int | None = None) -> np.ndarray:
    """The keys in the file at ``path`` (SOSD binary or text), sorted and unique. InvalidInput, one line naming
    the file and the problem (never the file's content), for a missing, empty, malformed or too large file.
    Limits, checked before the keys are read (``check_key_file``): ``max_bytes`` (the file's size), ``max_keys``
    (a SOSD file's count, read from its header; a text file is read line by line and refused at the first key past
    the cap)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            count = _checked_head(name, f, max_keys, max_bytes)
            if count is not None:
                f.seek(8)
                keys = np.fromfile(f, "<u8", count).astype(np.uint64)
                if len(keys) != count:
                    raise InvalidInput(f"{name}: the key file ended before its {count:,} keys")
                return _finish(name, keys)
            f.seek(0)
            return _finish(name, _text_keys(name, f, max_keys))
    except OSError as e:
        raise InvalidInput(f"{name}: cannot read the key file ({e.strerror or type(e).__name__})") from None


def check_key_file(path, max_keys: int | None = None, max_bytes: int | None = None) -> None:
    """What can be said of a key file without reading its keys (its kind, size, a SOSD header's count);
    InvalidInput as ``read_keys``."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            _checked_head(name, f, max_keys, max_bytes)
    except OSError as e:
        raise InvalidInput(f"{name}: cannot read the key file ({e.strerror or type(e).__name__})") from None


def _checked_head(name: str, f, max_keys: int | None, max_bytes: int | None) -> int | None:
    """A SOSD file's key count from its header (None for a text file), once the file is a regular one within
    ``max_bytes``, not empty, and a SOSD count is within ``max_keys``."""
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(f"{name}: not a regular file")
    size = st.st_size
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput(f"{name}: the key file has {size:,} bytes; at most {max_bytes:,} are read")
    if size <= 1 << 16 and not f.read().strip():
        raise InvalidInput(f"{name}: the key file is empty")
    f.seek(0)
    head = f.read(8)
    if size < 8 or (size - 8) % 8 or int(np.frombuffer(head, "<u8")[0]) * 8 + 8 != size:
        return None
    count = (size - 8) // 8
    if max_keys is not None and count > max_keys:
        raise InvalidInput(f"{name}: the key file holds {count:,} keys; at most {max_keys:,} are read")
    return count


def _text_keys(name: str, f, max_keys: int | None) -> np.ndarray:
    """The keys of a text file, one a line, read line by line (refused at the first key past ``max_keys``). A
    message names the line, never its text."""
    keys = np.empty(min(max_keys or 1 << 16, 1 << 16), np.uint64)
    n = 0
    for number, raw in enumerate(f, 1):
        try:
            item = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise InvalidInput(f"{name}: neither SOSD binary (a uint64 count and that many keys) nor text with one "
                               "key a line") from None
        if not item:
            continue
        if not item.isdigit():
            raise InvalidInput(f"{name}: line {number} is not a non-negative integer key")
        if len(item) > 20 or int(item) >= 2**64:
            raise InvalidInput(f"{name}: line {number}: the key does not fit in 64 bits")
        if max_keys is not None and n >= max_keys:
            raise InvalidInput(f"{name}: the key file holds more than {max_keys:,} keys; at most {max_keys:,} are "
                               "read")
        if n == len(keys):
            keys = np.resize(keys, 2 * n)
        keys[n] = int(item)
        n += 1
    return keys[:n]


def _finish(name: str, keys: np.ndarray) -> np.ndarray:
    keys = np.unique(keys)
    if len(keys) == 0:
        raise InvalidInput(f"{name}: the key file holds no keys")
    if keys[-1] == RESERVED:
        raise InvalidInput(f"{name}: key 18446744073709551615 (2**64-1) is reserved")
    return keys


def describe(keys: np.ndarray) -> dict[str, float]:
    """Features of a key set, all finite floats: ``log10_n``, ``log2_range`` (bits the keys span), ``gap_cv``
    (coefficient of variation of the gaps), ``gap_log_std`` (spread of log gaps), ``key_skew`` (skewness of the
    keys over their range), ``linear_r2`` (how well one line fits the CDF), ``top_gap_share`` (the largest gap
    over the range)."""
    keys = np.asarray(keys, dtype=np.uint64)
    n = len(keys)
    if n < 2:
        return {"log10_n": float(np.log10(max(n, 1))), "log2_range": 0.0, "gap_cv": 0.0, "gap_log_std": 0.0,
                "key_skew": 0.0, "linear_r2": 1.0, "top_gap_share": 0.0}
    x = (keys - keys[0]).astype(np.float64)
    span = max(x[-1], 1.0)
    gaps = np.diff(x)
    u = x / span
    sd = u.std()
    skew = float(((u - u.mean()) ** 3).mean() / sd**3) if sd > 0 else 0.0
    rank = np.arange(n, dtype=np.float64)
    r = np.corrcoef(u, rank)[0, 1] if sd > 0 else 1.0
    features = {"log10_n": float(np.log10(n)), "log2_range": float(np.log2(span + 1.0)),
                "gap_cv": float(gaps.std() / max(gaps.mean(), 1e-12)),
                "gap_log_std": float(np.log2(np.maximum(gaps, 1.0)).std()), "key_skew": skew,
                "linear_r2": float(r * r), "top_gap_share": float(gaps.max() / span)}
    return {k: (v if np.isfinite(v) else 0.0) for k, v in features.items()}
