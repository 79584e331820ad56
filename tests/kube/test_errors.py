"""API error answers become the store's errors, naming the object (the ``metav1.Status`` bodies
are those a Kubernetes API server sends)."""

from __future__ import annotations

import pytest

from olmkit.kube.transport import Ref, error_from_status
from olmkit.store import AlreadyExists, Conflict, Expired, Forbidden, Invalid, NotFound, StoreError

REF = Ref("ConfigMap", "ns", "a")


def status(code: int, reason: str, message: str, **details: object) -> dict[str, object]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
        "details": details,
    }


@pytest.mark.parametrize(
    ("code", "body", "expected", "text"),
    [
        (404, status(404, "NotFound", 'configmaps "a" not found'), NotFound, "ConfigMap ns/a not found"),
        (
            409,
            status(409, "AlreadyExists", 'configmaps "a" already exists'),
            AlreadyExists,
            "ConfigMap ns/a already exists",
        ),
        (
            409,
            status(409, "Conflict", 'Operation cannot be fulfilled on configmaps "a": the object has been modified'),
            Conflict,
            "operation cannot be fulfilled on ConfigMap ns/a: the object has been modified",
        ),
        (
            422,
            status(422, "Invalid", 'ConfigMap "a" is invalid: data: Invalid value', causes=[{"field": "data"}]),
            Invalid,
            'ConfigMap ns/a: data: ConfigMap "a" is invalid: data: Invalid value',
        ),
        (400, status(400, "BadRequest", "the body of the request was in an unknown format"), Invalid, "unknown format"),
        (410, status(410, "Expired", "too old resource version: 1 (5)"), Expired, "ConfigMap"),
        (403, status(403, "Forbidden", 'configmaps "a" is forbidden: User "u" cannot get'), Forbidden, "forbidden"),
        (500, None, StoreError, "the API server answered 500"),
    ],
)
def test_api_errors_map_onto_store_errors(code, body, expected, text) -> None:
    error = error_from_status(code, body, REF)

    assert type(error) is expected
    assert text in str(error)
    assert ("ConfigMap", "ns", "a") == (error.kind, error.namespace, error.name)
