"""Kubernetes timestamps: parsing RFC 3339 and kubectl's human ages (``45s``, ``5m30s``, ``2d4h``).

Shared by the command line's tables and the API server's ``Table`` responses.

.. versionadded:: 0.2
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["age", "parse_time"]


def parse_time(text: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, or ``None``."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's human duration since an RFC 3339 ``timestamp`` (``45s``, ``5m30s``, ``3h``, ``2d4h``).

    Returns ``<unknown>`` for a missing or unparsable timestamp, ``<invalid>`` for one more
    than a second in the future.
    """
    when = parse_time(timestamp)
    if when is None:
        return "<unknown>"
    now = now or datetime.now(UTC)
    seconds = int((now - when).total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"
