"""What a run's result shows a person, as data: a ``Report`` of blocks that each kind's folder builds from its
result (``<kind>/face.py``: ``report``), and each face draws its own way (the CLI with rich: ``advisor.cli.render
.report``). A kind says *what* to show (its tables, its lines, which recommendation); a face says *how*. Texts are
plain: a face escapes them for its markup.

>>> from types import SimpleNamespace as Rec
>>> r = Report((Text("what-if: relative cost 0.42"), Table(("index", "verdict"), (("i1", "kept"),)),
...             Recommendation(Rec(id="a1b2c3d4e5f6"))))
>>> [type(b).__name__ for b in r.blocks], r.recommendations()
(['Text', 'Table', 'Recommendation'], ['a1b2c3d4e5f6'])
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Text:
    """A line. ``label``: a word shown before it, set apart (``finding``); ``warn``: the label is a warning (``not
    replayed``: a face may colour it); ``strong``: the line starts a section (a face sets it apart)."""

    text: str
    label: str = ""
    strong: bool = False
    warn: bool = False


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""


@dataclass(frozen=True)
class Fields:
    """A block of name: value pairs (an explained statement's facts), under an optional ``title``."""

    pairs: tuple[tuple[str, str], ...]
    title: str = ""


@dataclass(frozen=True)
class Recommendation:
    """A recommendation (``core.domain.Recommendation``, as the run left it), drawn by the face's own
    recommendation block (its changes, headline numbers, evidence, SQL), with ``reasons`` per change name when the
    run gave some."""

    rec: object
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.rec.id


@dataclass(frozen=True)
class Closing:
    """The last screen of a run that made several recommendations (the face's: what to apply, what was left out,
    where the details are)."""


@dataclass(frozen=True)
class Report:
    blocks: tuple = ()

    def recommendations(self) -> list[str]:
        """The ids of the recommendations it shows, in order."""
        return [b.id for b in self.blocks if isinstance(b, Recommendation)]

    def __add__(self, other: "Report") -> "Report":
        return Report(self.blocks + other.blocks)


def dropped(rows) -> tuple:
    """The "not recommended" table: each candidate tried and left out, and why (``advisor.tuning.recommend``); no
    block when there is none."""
    rows = [d for d in rows or () if isinstance(d, dict)]
    if not rows:
        return ()
    return (Table(("change", "kind", "why"), tuple((str(d.get("change", "")), str(d.get("kind", "")),
                                                     str(d.get("why", ""))) for d in rows), "not recommended"),)
