"""Time values passed into commands: UTC-aware datetimes, never the clock."""

from __future__ import annotations

from datetime import UTC, datetime

from domain.errors import InvalidInput


def utc(moment: datetime) -> datetime:
    """Refuse naive datetimes; normalise aware ones to UTC."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(f"timestamp {moment.isoformat()} has no timezone; pass UTC")
    return moment.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """A fixed-width ISO-8601 UTC string that sorts as text (read models)."""
    if moment is None:
        return None
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
