#!/usr/bin/env bash
# Installs what db-advisor needs on a fresh Debian 12 machine, idempotently:
#   1. Debian packages: PostgreSQL 15 server with HypoPG and pg_qualstats, MariaDB 10.11 (mariadb-server, the second
#      engine's sandboxes; it starts no service of its own here; mariadb-backup, a warm replica's physical copy),
#      xfsprogs (a loopback XFS volume with reflink, for thin clones of a warm replica), chromium for the web UI tests, wrk for the API benchmark,
#      swig, g++ and the Python headers to build pyrfr (SMAC3's random forest, no wheel) (apt, only if missing);
#   2. .venv with torch==2.13.0 installed FIRST (CPU wheel), then the package and its dev dependencies pinned by
#      constraints.txt. Re-runs only when pyproject.toml or constraints.txt changed (stamp file).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(postgresql postgresql-15-hypopg postgresql-15-pg-qualstats mariadb-server mariadb-backup xfsprogs chromium wrk swig g++ python3-dev)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # the Debian package starts a cluster of its own on 5432; db-advisor only uses its own sandboxes
  $SUDO pg_ctlcluster 15 main stop 2>/dev/null || true
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.advisor-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python packages into .venv (torch first)" >&2
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -c constraints.txt -e ".[dev]"
  echo "$want" > "$stamp"
fi
