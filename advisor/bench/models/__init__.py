"""``advisor bench models``: the shipped models against training per target, on targets no model was trained on.

``bench`` runs it (and holds the part of Aurora's rule policy); ``litune`` LITune's models; ``ia2`` IA2's agent."""

from __future__ import annotations


def text_table(head: str, lines: list[str], note: str) -> str:
    """A bench table as text: its head, a rule, its lines, then the note that says how to read it."""
    return "\n".join([head, "-" * len(head), *lines, note])


def cell(v: float | None) -> str:
    """A ratio in a table cell (``-``: none)."""
    return "-" if v is None else f"{v:.3f}"
