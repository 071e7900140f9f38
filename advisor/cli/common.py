"""What every CLI module shares: the ``--json`` and ``--store`` options, the service (from
``advisor.service.factory``), one JSON document on stdout, times, and repeatable options that take comma lists."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated

import typer

from advisor.core.progress import reporter
from advisor.storage import codec

JsonFlag = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
StoreOpt = Annotated[str | None, typer.Option("--store", help="path of the DuckDB store (default: ADVISOR_STORE)")]


class Kind(str, Enum):
    knobs = "knobs"
    indexes = "indexes"


def open_service(store: str | None, quiet: bool = False):
    """The service over the store (runs execute in this process), its progress on stderr unless ``quiet``."""
    from advisor.service.factory import build_service

    return build_service(store, say=reporter(quiet=quiet))


def emit(doc: object) -> None:
    """``doc`` as the one JSON document on stdout."""
    sys.stdout.write(json.dumps(codec.plain(doc), indent=2, default=str) + "\n")


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else "-"


def names(items: list[str]) -> tuple[str, ...]:
    """Values of a repeatable option that also takes comma lists: ``--kind knobs --kind indexes`` or
    ``--kind knobs,indexes``."""
    return tuple(n.strip() for item in items for n in item.split(",") if n.strip())
