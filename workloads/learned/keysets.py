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


def read_keys(path) -> np.ndarray:
    """The keys in the file at ``path`` (SOSD binary or text), sorted and unique. InvalidInput, one line naming
    the file and the problem, for a missing, empty or malformed file."""
    name = os.fspath(path)
    try:
        raw = open(name, "rb").read()
    except OSError as e:
        raise InvalidInput(f"{name}: cannot read the key file ({e.strerror or e})") from None
    if not raw.strip():
        raise InvalidInput(f"{name}: the key file is empty")
    if len(raw) >= 8 and (len(raw) - 8) % 8 == 0:
        count = int(np.frombuffer(raw[:8], "<u8")[0])
        if count * 8 + 8 == len(raw):
            keys = np.frombuffer(raw[8:], "<u8").astype(np.uint64)
            return _finish(name, keys)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidInput(f"{name}: neither SOSD binary (a uint64 count and that many keys) nor text with one "
                           "key a line") from None
    values = []
    for number, line in enumerate(text.splitlines(), 1):
        item = line.strip()
        if not item:
            continue
        if not item.isdigit():
            raise InvalidInput(f"{name}: line {number}: {item[:40]!r} is not a non-negative integer key")
        value = int(item)
        if value >= 2**64:
            raise InvalidInput(f"{name}: line {number}: {item[:40]} does not fit in 64 bits")
        values.append(value)
    return _finish(name, np.array(values, dtype=np.uint64))


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
