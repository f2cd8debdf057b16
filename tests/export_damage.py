"""Damage done to an `events export` file's lines, for the import tests (CLI and API)."""

from __future__ import annotations

Lines = list[str]


def drop(lines: Lines) -> Lines:
    """A line missing: a gap."""
    return lines[:5] + lines[6:]


def swap(lines: Lines) -> Lines:
    """Two lines exchanged."""
    return lines[:5] + [lines[6], lines[5]] + lines[7:]


def edit_payload(lines: Lines) -> Lines:
    """A payload edited, its stored state not."""
    return [line.replace('"name":"Product 2"', '"name":"Product X"', 1) for line in lines]
