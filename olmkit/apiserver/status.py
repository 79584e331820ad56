"""API errors as ``metav1.Status``, with the codes, reasons and messages the Kubernetes API uses.

kubectl prints a failure as ``Error from server (<reason>): <message>``, and client libraries
branch on ``code`` and ``reason``; the messages follow the API server's wording.

.. versionadded:: 0.2
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olmkit.store import AlreadyExists, Conflict, Expired, Invalid, NotFound, StoreError

if TYPE_CHECKING:
    from olmkit.apiserver.resources import Resource

__all__ = ["ApiError", "from_store_error", "status_object"]


def status_object(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``Status`` object (``Failure`` unless the code is 2xx)."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if 200 <= code < 300 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return status


class ApiError(Exception):
    """A request failed: answered with a ``Status`` object and its HTTP code."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def not_found(cls, resource: Resource, name: str) -> ApiError:
        return cls(
            404,
            "NotFound",
            f'{resource.qualified} "{name}" not found',
            {"name": name, "group": resource.group, "kind": resource.plural},
        )

    @classmethod
    def invalid(cls, resource: Resource, name: str, causes: list[tuple[str, str]]) -> ApiError:
        """422 Invalid; ``causes`` are ``(field, message)`` pairs."""
        text = ", ".join(f"{field}: {message}" if field else message for field, message in causes)
        return cls(
            422,
            "Invalid",
            f'{resource.qualified_kind} "{name}" is invalid: {text}',
            {
                "name": name,
                "group": resource.group,
                "kind": resource.kind,
                "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes],
            },
        )


def from_store_error(exc: StoreError, resource: Resource, name: str = "") -> ApiError:
    """The API's answer to a store error about an object of ``resource``."""
    name = exc.name or name
    details = {"name": name, "group": resource.group, "kind": resource.plural}
    if isinstance(exc, NotFound):
        return ApiError.not_found(resource, name)
    if isinstance(exc, AlreadyExists):
        return ApiError(409, "AlreadyExists", f'{resource.qualified} "{name}" already exists', details)
    if isinstance(exc, Conflict):
        detail = (
            exc.message or "the object has been modified; please apply your changes to the latest version and try again"
        )
        return ApiError(
            409, "Conflict", f'Operation cannot be fulfilled on {resource.qualified} "{name}": {detail}', details
        )
    if isinstance(exc, Expired):
        return ApiError(410, "Expired", f"too old resource version: {exc.resource_version} ({exc.oldest})")
    if isinstance(exc, Invalid):
        return ApiError.invalid(resource, name, [(exc.field, exc.message)])
    return ApiError(500, "InternalError", f"Internal error occurred: {exc}")
