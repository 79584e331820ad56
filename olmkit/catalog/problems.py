"""Problems found in a catalog: what ``olmkit catalog validate`` reports.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Final

import attrs

__all__ = ["ERROR", "WARNING", "Problem"]

ERROR: Final = "error"
WARNING: Final = "warning"


@attrs.frozen(slots=True)
class Problem:
    """One problem, naming everything a maintainer needs to find and fix it.

    Args:
        severity: ``error`` (the catalog is invalid) or ``warning``.
        message: what is wrong.
        path: the file, when known.
        line: the line in that file, when known.
        package: the package concerned, when known.
        blob: the blob concerned (``schema name``, e.g. ``olm.bundle foo.v1``), when known.
        field: the field path inside the blob, when known.
    """

    severity: str
    message: str
    path: str | None = None
    line: int | None = None
    package: str | None = None
    blob: str | None = None
    field: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The problem as a JSON-friendly mapping (``-o json``)."""
        return {
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "package": self.package,
            "blob": self.blob,
            "field": self.field,
        }

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line else "")
        subject = " ".join(
            p
            for p in (
                f"package {self.package}" if self.package else "",
                self.blob or "",
                f"field {self.field}" if self.field else "",
            )
            if p
        )
        parts = [p for p in (where, subject) if p]
        return f"{self.severity}: {': '.join(parts)}: {self.message}" if parts else f"{self.severity}: {self.message}"
