"""Key sets for learned indexes: sorted unique uint64 arrays.

``synthetic(name, n, seed)`` draws one of ``SYNTHETIC`` (shapes after SOSD's data sets, at any size):
``books`` lognormal (a smooth, strongly curved CDF), ``fb`` heavy-tailed (dense ids with a Pareto tail),
``osm`` clustered (Zipf-sized clusters of cell ids), ``uniform`` and ``normal``; and generated families of other
shapes (``GENERATED``): ``lognormal`` (a wide one, sigma 2), ``zipf-clustered`` (Zipf-sized runs of nearly
consecutive ids), ``piecewise`` (piecewise-linear segments of densities orders of magnitude apart), ``bursty``
(event timestamps: quiet stretches and bursts a thousand times denser), ``sequential`` (ids counted up with gaps:
deleted runs and jumps) and ``mixture`` (uniform, lognormal and clustered keys together). Each is drawn from a seed.
``read_keys(path)`` reads SOSD's binary format (uint64 count, then the keys, little endian) or text (one
non-negative integer a line); ``describe(keys)`` gives the features a tuner is told about a key set.

>>> k = synthetic("books", 1000, seed=1)
>>> len(k), k.dtype.name, bool((k[1:] > k[:-1]).all())
(1000, 'uint64', True)
>>> sorted(describe(k))[:3]
['burstiness', 'cdf_err_1', 'cdf_err_16']
"""

from __future__ import annotations

import os
import stat

import numpy as np

from advisor.core.errors import InvalidInput

SOSD_LIKE = ("books", "fb", "osm", "uniform", "normal")
GENERATED = ("lognormal", "zipf-clustered", "piecewise", "bursty", "sequential", "mixture")
SYNTHETIC = SOSD_LIKE + GENERATED
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
    if name == "normal":
        return rng.normal(2.0**59, 2.0**55, m)
    return _generated(name, m, rng)


def _generated(name: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """The ``GENERATED`` families' raw draws (floats; ``synthetic`` makes them unique keys)."""
    if name == "lognormal":
        return rng.lognormal(0.0, 2.0, m) * 2.0**40
    if name == "zipf-clustered":
        k = max(4, m // 2000)
        sizes = rng.zipf(1.3, k).astype(float)
        counts = np.maximum(1, np.round(m * sizes / sizes.sum())).astype(int)
        starts = np.sort(rng.uniform(0, 2.0**50, k))
        return np.concatenate([s + np.cumsum(rng.geometric(0.7, c)) for s, c in zip(starts, counts)])
    if name == "piecewise":
        k = int(rng.integers(8, 33))
        density = 10.0 ** rng.uniform(0, 4, k)  # keys per unit of key space, per segment
        counts = rng.multinomial(m, density / density.sum())
        edges = np.concatenate([[0.0], np.cumsum(rng.uniform(1, 10, k))]) * 2.0**44
        return np.concatenate([rng.uniform(edges[i], edges[i + 1], c) for i, c in enumerate(counts)])
    if name == "bursty":
        burst = np.cumsum(rng.random(m) < 0.002) % 2 == 1  # on/off bursts, a few hundred events each
        gaps = rng.exponential(np.where(burst, 1.0, 1000.0)) * 2.0**16
        return 2.0**50 + np.cumsum(gaps)
    if name == "sequential":
        steps = np.where(rng.random(m) < 0.01, rng.pareto(1.2, m) * 1000 + 2, 1.0)
        return 2.0**32 + np.cumsum(np.floor(steps))
    parts = rng.choice(3, m, p=[0.4, 0.4, 0.2])  # mixture
    centers = rng.uniform(0, 2.0**56, 16)
    return np.where(parts == 0, rng.uniform(0, 2.0**56, m),
                    np.where(parts == 1, rng.lognormal(0.0, 1.0, m) * 2.0**50,
                             centers[rng.integers(0, 16, m)] + rng.normal(0, 2.0**30, m)))


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
    """Features of a key set's shape, all finite floats: ``log10_n``, ``log2_range`` (bits the keys span),
    ``gap_cv`` (coefficient of variation of the gaps), ``gap_log_std`` (spread of log gaps), ``key_skew``
    (skewness of the keys over their range), ``linear_r2`` (how well one line fits the CDF), ``top_gap_share``
    (the largest gap over the range); the gaps' quantiles ``gap_q10`` / ``gap_q90`` / ``gap_q99`` (log2 over the
    median gap); ``cdf_err_<S>`` for S = 1, 16, 256 (log2 of 1 + the mean error, in positions, of S equal-count
    linear pieces of the CDF: how well a learned model fits at that scale); ``min_gap_share`` (gaps equal to the
    smallest: runs of near-duplicate or consecutive keys); ``burstiness`` (log10 of the index of dispersion of the
    keys' counts in 1,024 equal-width windows: 0 for a Poisson-like spread, high for bursts)."""
    keys = np.asarray(keys, dtype=np.uint64)
    n = len(keys)
    names = ("log10_n", "log2_range", "gap_cv", "gap_log_std", "key_skew", "linear_r2", "top_gap_share", "gap_q10",
             "gap_q90", "gap_q99", "cdf_err_1", "cdf_err_16", "cdf_err_256", "min_gap_share", "burstiness")
    if n < 2:
        return {k: (float(np.log10(max(n, 1))) if k == "log10_n" else 1.0 if k == "linear_r2" else 0.0)
                for k in names}
    x = (keys - keys[0]).astype(np.float64)
    span = max(x[-1], 1.0)
    gaps = np.diff(x)
    u = x / span
    sd = u.std()
    skew = float(((u - u.mean()) ** 3).mean() / sd**3) if sd > 0 else 0.0
    rank = np.arange(n, dtype=np.float64)
    r = np.corrcoef(u, rank)[0, 1] if sd > 0 else 1.0
    lg = np.log2(np.maximum(gaps, 1.0))
    q10, q50, q90, q99 = np.quantile(lg, [0.1, 0.5, 0.9, 0.99])
    counts = np.bincount(np.minimum((u * 1024).astype(np.int64), 1023), minlength=1024).astype(np.float64)
    dispersion = counts.var() / max(counts.mean(), 1e-12)
    features = {"log10_n": float(np.log10(n)), "log2_range": float(np.log2(span + 1.0)),
                "gap_cv": float(gaps.std() / max(gaps.mean(), 1e-12)), "gap_log_std": float(lg.std()),
                "key_skew": skew, "linear_r2": float(r * r), "top_gap_share": float(gaps.max() / span),
                "gap_q10": float(q10 - q50), "gap_q90": float(q90 - q50), "gap_q99": float(q99 - q50),
                **{f"cdf_err_{s}": _cdf_error(x, s) for s in (1, 16, 256)},
                "min_gap_share": float(np.mean(gaps <= gaps.min())),
                "burstiness": float(np.log10(max(dispersion, 1e-3)))}
    return {k: (float(v) if np.isfinite(v) else 0.0) for k, v in features.items()}


def _cdf_error(x: np.ndarray, pieces: int) -> float:
    """log2(1 + mean |position error|) of ``pieces`` equal-count linear pieces through the CDF's points (each piece
    the line between its first and last key), at most 65,536 keys sampled evenly."""
    n = len(x)
    step = max(1, n // 65_536)
    pos = np.arange(0, n, step, dtype=np.float64)
    xs = x[::step]
    bounds = np.linspace(0, len(xs) - 1, min(pieces, max(len(xs) - 1, 1)) + 1).round().astype(np.int64)
    which = np.clip(np.searchsorted(bounds, np.arange(len(xs)), side="right") - 1, 0, len(bounds) - 2)
    lo, hi = bounds[which], bounds[which + 1]
    width = np.maximum(xs[hi] - xs[lo], 1e-12)
    predicted = pos[lo] + (xs - xs[lo]) / width * (pos[hi] - pos[lo])
    return float(np.log2(1.0 + np.abs(predicted - pos).mean()))
