"""Errors of the cluster store, shaped like the Kubernetes API's status reasons.

Every store error derives from :class:`StoreError` (an :class:`~olmkit.errors.OlmkitError`)
and carries the object it concerns as structured fields, so a controller can branch on the
class (``except Conflict``) and a front end can print one clear line. ``code`` and
``reason`` are the HTTP status code and ``metav1.StatusReason`` the Kubernetes API would
answer with, which lets a backend on a real cluster map its errors one to one.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from olmkit.errors import OlmkitError

__all__ = ["AlreadyExists", "Conflict", "Expired", "Forbidden", "Invalid", "NotFound", "StoreError"]


@attrs.define(auto_exc=True, eq=False)
class StoreError(OlmkitError):
    """A store operation failed.

    Args:
        message: detail of what went wrong.
        kind: the object's kind, when the error concerns one.
        namespace: its namespace (``None`` for cluster-scoped objects).
        name: its name.
    """

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    kind: str = attrs.field(default="", kw_only=True)
    namespace: str | None = attrs.field(default=None, kw_only=True)
    name: str = attrs.field(default="", kw_only=True)

    @property
    def object_ref(self) -> str:
        """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}".strip()

    def __str__(self) -> str:
        ref = self.object_ref
        return f"{ref}: {self.message}" if ref else self.message


@attrs.define(auto_exc=True, eq=False)
class NotFound(StoreError):
    """The object does not exist (the API's 404)."""

    code: ClassVar[int] = 404
    reason: ClassVar[str] = "NotFound"

    def __str__(self) -> str:
        return f"{self.object_ref} not found" + (f": {self.message}" if self.message else "")


@attrs.define(auto_exc=True, eq=False)
class AlreadyExists(StoreError):
    """An object with this kind, namespace and name exists already (the API's 409)."""

    code: ClassVar[int] = 409
    reason: ClassVar[str] = "AlreadyExists"

    def __str__(self) -> str:
        return f"{self.object_ref} already exists"


@attrs.define(auto_exc=True, eq=False)
class Conflict(StoreError):
    """A write carried a stale ``metadata.resourceVersion`` (the API's 409 Conflict).

    Args:
        expected: the resourceVersion the write carried.
        actual: the object's current resourceVersion.
    """

    code: ClassVar[int] = 409
    reason: ClassVar[str] = "Conflict"

    expected: str = attrs.field(default="", kw_only=True)
    actual: str = attrs.field(default="", kw_only=True)

    def __str__(self) -> str:
        detail = self.message or (
            f"the object has been modified (resourceVersion {self.expected} is stale, current is "
            f"{self.actual}); read it again and retry"
        )
        return f"operation cannot be fulfilled on {self.object_ref}: {detail}"


@attrs.define(auto_exc=True, eq=False)
class Expired(StoreError):
    """A watch asked to resume from a resourceVersion older than the kept history (the API's 410 Gone).

    Args:
        resource_version: the resourceVersion asked for.
        oldest: the oldest resourceVersion a watch can still resume from.
    """

    code: ClassVar[int] = 410
    reason: ClassVar[str] = "Expired"

    resource_version: str = attrs.field(default="", kw_only=True)
    oldest: str = attrs.field(default="", kw_only=True)

    def __str__(self) -> str:
        what = f" of {self.kind}" if self.kind else ""
        return (
            f"watch{what} from resourceVersion {self.resource_version} has expired: too old, history starts "
            f"after {self.oldest}; list again and watch from the list's resourceVersion"
        )


@attrs.define(auto_exc=True, eq=False)
class Invalid(StoreError):
    """The object or request is malformed (the API's 422).

    Args:
        field: the field path at fault (``metadata.name``, ``labelSelector`` ...), when known.
    """

    code: ClassVar[int] = 422
    reason: ClassVar[str] = "Invalid"

    field: str = attrs.field(default="", kw_only=True)

    def __str__(self) -> str:
        ref = self.object_ref
        where = ": ".join(p for p in (ref, self.field) if p)
        return f"{where}: {self.message}" if where else self.message


@attrs.define(auto_exc=True, eq=False)
class Forbidden(StoreError):
    """The API server's authorization refused the request (the API's 403): the credentials lack a
    permission. Only a store on an API server raises it (olmkit's own stores have no RBAC).

    .. versionadded:: 0.4
    """

    code: ClassVar[int] = 403
    reason: ClassVar[str] = "Forbidden"
