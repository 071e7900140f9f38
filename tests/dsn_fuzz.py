"""A deterministic DSN fuzz: a few hundred malformed or odd DSNs and URLs, each with the password ``MARKER`` in
it (in every place a password goes, and in the places a mistake puts it), from a fixed seed. ``VALUE`` is in the
places no password goes (sslmode, keepalives, options, unknown keywords): it may be shown as part of a target's
DSN, never in an error (libpq and the server quote the value they refuse, and that could be a password).

Every DSN names loopback addresses, socket directories, no host, or (a few misread ones) a name that cannot
resolve: ``closed`` is a port nobody listens on, ``live`` the port of a real server (its errors come from it).
"""

from __future__ import annotations

import random

MARKER = "Fz9-pw-MARKER"
VALUE = "Fz9-val-VALUE"

# libpq's options whose values are numbers (or 0/1 flags), and values that are no such number
NUMERIC = ("port", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
           "tcp_user_timeout", "sslcompression", "sslsni", "requiressl")
NOT_NUMBERS = ("abc", "1e400", "-1", "99999999999999999999", "", "0x10", "1.5", " 7 ", "\u0663", "NaN", VALUE)
KEYWORDS = ("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "options", "application_name",
            "sslmode", "connect_timeout", "target_session_attrs", "channel_binding", "gssencmode", "service",
            "client_encoding", "keepalives")
ODD = ("", " ", "'", "\\", "=", "%", "%ZZ", "%00", "\u00e9\u00df\u4e2d", "\U0001f600", "a\x00b", "\t\n", "x" * 5000,
       "--", "-c", "'quoted value'", "a b", "@", "/", "?", "#", ":", "[", "]", ",")
SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full", "bogus", "", "REQUIRE", VALUE)
HOSTADDRS = ("999.1.1.1", "abc", "1.2.3", "::zz", "", "127.0.0.1.1", "-1", "1.2.3.4/8", VALUE, "\u0661.1.1.1")
OPTIONS = ("-c statement_timeout=abc", f"-c work_mem={VALUE}", "-c", "--", "-c foo", f"-c search_path={VALUE}",
           "-c x=" + "y" * 3000, "-cwork_mem=1MB")


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fixed_cases(closed: int, live: int) -> list[str]:
    """Hand-made cases: bad percent-encoding, unknown keywords, huge ports, every numeric option given no number,
    unicode, NUL bytes, very long strings, sslmode, options=-c, hostaddr garbage, the password in each place."""
    pw = MARKER
    kv = f"host=127.0.0.1 port={closed} dbname=shop user=alice"
    url = f"127.0.0.1:{closed}/shop"
    out = [
        # the password where it belongs, in each form
        f"{kv} password={pw}", f"{kv} password={_quote(pw + ' x')}", f"postgresql://alice:{pw}@{url}",
        f"postgresql://alice@{url}?password={pw}", f"postgresql://:{pw}@{url}", f"postgres://alice:{pw}@{url}",
        f"postgresql://alice:{pw}@127.0.0.1:{live}/no_such_db", f"host=127.0.0.1 port={live} user=alice password={pw}",
        # and where mistakes put it
        f"postgresql://alice:{pw}/shop", f"postgresql://alice:{pw}", f"postgresql://alice:{pw}@",
        f"postgresql://alice:{pw}@@127.0.0.1:{closed}/shop", f"postgresql://alice:{pw}@x@127.0.0.1:{closed}/shop",
        f"postgresql://alice:{pw}:{pw}@127.0.0.1:{closed}/shop", f"postgresql://alice:{pw}#@127.0.0.1/shop",
        f"postgresql://alice:{pw}?@127.0.0.1/shop", f"postgresql://alice:{pw}/@127.0.0.1/shop",
        f"{kv} password {pw}", f"{kv} password={pw} x", f"{kv} password='{pw}", f"{kv} password={pw}'",
        f"{kv} password=\\{pw}", f"{kv} password==={pw}", f"password={pw}{kv}", f"{pw}", f"{pw}=1 {kv}",
        f"{kv} passwrd={pw}", f"postgresql://alice@{url}?passwrd={pw}", f"postgresql://alice@{url}?{pw}",
        f"{kv} password= user={pw}", f"host= password={pw} port={closed}", f"{kv} dbname= password={pw}",
        f"postgresql://alice:/{pw}@{url}", f"postgresql://alice:{pw}/x@{url}", f"postgresql://alice:a?{pw}@{url}",
        f"postgresql://alice:{pw}@{url}?sslmode", f"postgresql://alice:{pw}@{url}?=x",
        f"mysql://alice:{pw}@127.0.0.1/shop", f"mariadb://alice:{pw}@127.0.0.1/shop", f"http://alice:{pw}@127.0.0.1",
        f"postgresql:/alice:{pw}@127.0.0.1", f"postgresql:alice:{pw}@127.0.0.1", f" postgresql://alice:{pw}@{url}",
        f"postgresql ://alice:{pw}@{url}", f"POSTGRESQL://alice:{pw}@{url}", f"\npostgresql://alice:{pw}@{url}",
        # bad percent-encoding
        f"postgresql://alice:{pw}%ZZ@{url}", f"postgresql://alice:{pw}%@{url}", f"postgresql://alice:{pw}%4@{url}",
        f"postgresql://alice:{pw}%00@{url}", f"postgresql://alice:%{pw}@{url}", f"postgresql://alice@{url}%G0",
        f"postgresql://alice:{pw}@127.0.0.1:{closed}/sh%op", f"postgresql://alice:{pw}@{url}?application_name=%ZZ",
        # NUL bytes in every position
        f"{kv} password={pw}\x00", f"{kv}\x00 password={pw}", f"postgresql://alice:{pw}\x00@{url}",
        f"postgresql://alice:\x00{pw}@{url}", f"postgresql://al\x00ice:{pw}@{url}", f"\x00{kv} password={pw}",
        f"host=127.0.0.1\x00 port={closed} password={pw}", f"postgresql://alice:x@{url}\x00{pw}",
        # huge, negative and odd ports
        *(f"host=127.0.0.1 port={p} password={pw}" for p in ("99999999999999999999", "65536", "0", "-1", "1e400",
                                                             "", "5432,", ",", "1,2,3", "\u0665\u0664")),
        *(f"postgresql://alice:{pw}@127.0.0.1:{p}/shop" for p in ("99999999999999999999", "65536", "-1", "abc", "")),
        # unicode and very long strings
        f"{kv} password={pw}\u00e9\u4e2d", f"host=127.0.0.1 port={closed} dbname=\u00e9\u00df\u4e2d password={pw}",
        f"host=127.0.0.1 port={closed} user=\U0001f600 password={pw}",
        f"{kv} password={pw} application_name=\u202e{VALUE}",
        f"{kv} password={pw}{'x' * 100_000}", f"host=127.0.0.1 port={closed} dbname={'d' * 10_000} password={pw}",
        f"{kv} password={pw} application_name={'a' * 10_000}", f"postgresql://alice:{pw}@{url}?{'a=b&' * 2000}",
        f"{kv} password={pw} " + "x=y " * 2000, "=" * 10_000, "postgresql://" + "%" * 10_000,
        # degenerate forms
        "", " ", "\n", "'", "=", "host", "host=", "host=''", "postgresql://", "postgresql:///", "postgres://@",
        "postgresql://[::1", "postgresql://[::1:1/x", "postgresql://127.0.0.1:1,127.0.0.2:1/x", "\\", "#",
        f"service=no_such_service password={pw}", f"{kv} password={pw} service=no_such_service",
    ]
    for opt in NUMERIC:
        for bad in NOT_NUMBERS:
            out.append(f"{kv} password={pw} {opt}={_quote(bad)}")
    for mode in SSLMODES:
        out.append(f"{kv} password={pw} sslmode={_quote(mode)}")
        out.append(f"postgresql://alice:{pw}@{url}?sslmode={mode}")
    for addr in HOSTADDRS:
        out.append(f"hostaddr={_quote(addr)} port={closed} password={pw}")
    for opts in OPTIONS:
        out.append(f"{kv} password={pw} options={_quote(opts)}")
        out.append(f"host=127.0.0.1 port={live} dbname=postgres user=postgres password={pw} options={_quote(opts)}")
    return out


def random_cases(closed: int, live: int, n: int, seed: int = 13) -> list[str]:
    """``n`` DSNs of random keywords and odd values, key=value or URL, with the password in a random place."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        pairs = [("host", rng.choice(["127.0.0.1", "::1", "/nonexistent-socket-dir", ""])),
                 ("port", str(rng.choice([closed, closed, live])))]
        for _ in range(rng.randint(0, 4)):
            key = rng.choice(KEYWORDS + NUMERIC + ("bogus", VALUE, ""))
            if key in ("host", "port", "service"):
                continue
            shown = key in ("dbname", "user")  # errors may name the database and the user: no VALUE there
            pairs.append((key, rng.choice(ODD + tuple(v for v in NOT_NUMBERS if not shown or v != VALUE) + ("x",))))
        pairs.insert(rng.randrange(len(pairs) + 1), ("password", MARKER + rng.choice(ODD + ("",) * 6)))
        if rng.random() < 0.5:
            sep = rng.choice([" ", "  ", "\t", "\n"])
            out.append(sep.join(f"{k}={_quote(v) if rng.random() < 0.5 else v}" for k, v in pairs))
        else:
            q = dict(pairs)
            user = q.pop("user", "alice")
            userinfo = f"{user}:{q.pop('password')}" if rng.random() < 0.7 else user
            rest = "&".join(f"{k}={v}" for k, v in q.items() if k not in ("host", "port"))
            host = f"[{q['host']}]" if ":" in q["host"] else q["host"]
            query = f"?{rest}" if rest else ""
            out.append(f"postgresql://{userinfo}@{host}:{q['port']}/{q.get('dbname', 'shop')}{query}")
    return out


def cases(closed: int, live: int, n_random: int = 150) -> list[str]:
    return fixed_cases(closed, live) + random_cases(closed, live, n_random)
