"""OpenAPI documents: v3 per group version (``kubectl explain``, kubectl's field-validation check)
and a minimal v2 document (kubectl downloads it before validating, and reads protobuf).

Every resource's PATCH operation declares the ``fieldValidation`` query parameter, so kubectl
leaves validation to the server (``?fieldValidation=Strict``) instead of validating client-side.

.. versionadded:: 0.2
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson

from olmkit.apiserver.resources import Catalog, Resource

__all__ = ["V2_PROTOBUF", "v2_json", "v2_protobuf", "v3_document", "v3_index"]

V2_PROTOBUF: Final = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_TITLE: Final = "olmkit"
_VERSION: Final = "v1.32.0"


def _proto_string(field: int, text: str) -> bytes:
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


def v2_protobuf() -> bytes:
    """``openapi_v2.Document{swagger: "2.0", info: {title, version}}`` in protobuf wire format.

    No definitions: kubectl skips client-side validation of kinds it finds no schema for, and
    asks the server to validate (see the v3 documents).
    """
    info = _proto_string(1, _TITLE) + _proto_string(2, _VERSION)
    return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


def v2_json() -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": _TITLE, "version": _VERSION}, "paths": {}, "definitions": {}}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _schema_name(resource: Resource) -> str:
    reversed_group = ".".join(reversed(resource.group.split("."))) if resource.group else "io.k8s.api.core"
    return f"{reversed_group}.{resource.version}.{resource.kind}"


def v3_index(catalog: Catalog) -> dict[str, Any]:
    """``/openapi/v3``: where each group version's document is (with a content hash, as the API server)."""
    paths = {}
    for group, version in sorted(catalog.by_gv):
        digest = hashlib.sha256(orjson.dumps(v3_document(catalog, group, version))).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def _object_schema(resource: Resource) -> dict[str, Any]:
    base: dict[str, Any] = dict(resource.schema) if resource.schema else {}
    if not base:
        base = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    base.setdefault("type", "object")
    base.setdefault("description", f"{resource.kind} of {resource.api_version}.")
    properties = dict(base.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string", "description": "APIVersion of the object."})
    properties.setdefault("kind", {"type": "string", "description": "Kind of the object."})
    properties["metadata"] = {
        "type": "object",
        "description": "Standard object's metadata.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    base["properties"] = properties
    base["x-kubernetes-group-version-kind"] = [_gvk(resource)]
    return base


#: the query parameters of every write
_WRITE_QUERY: Final = [
    {"name": name, "in": "query", "schema": {"type": "string"}}
    for name in ("dryRun", "fieldManager", "fieldValidation")
]


def _gvk(resource: Resource) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": resource.kind}


def _operations(resource: Resource, ref: str) -> dict[str, Any]:
    gvk = _gvk(resource)
    body = {"content": {"application/json": {"schema": {"$ref": ref}}}}
    ok = {"200": body}
    query = _WRITE_QUERY
    return {
        "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "get", "responses": ok},
        "put": {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "put",
            "parameters": query,
            "requestBody": body,
            "responses": ok,
        },
        "patch": {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "patch",
            "parameters": [*query, {"name": "force", "in": "query", "schema": {"type": "boolean"}}],
            "requestBody": {"content": {"application/merge-patch+json": {"schema": {"type": "object"}}}},
            "responses": ok,
        },
        "delete": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "delete", "responses": ok},
    }


def v3_document(catalog: Catalog, group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group version: paths and the schema of each kind."""
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    prefix = "/" + _gv_path(group, version)
    for resource in sorted(catalog.by_gv.get((group, version), {}).values(), key=lambda r: r.plural):
        name = _schema_name(resource)
        schemas[name] = _object_schema(resource)
        ref = f"#/components/schemas/{name}"
        scope = f"{prefix}/namespaces/{{namespace}}" if resource.namespaced else prefix
        gvk = _gvk(resource)
        paths[f"{scope}/{resource.plural}"] = {
            "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "list", "responses": {"200": {}}},
            "post": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "post",
                "parameters": _WRITE_QUERY,
                "requestBody": {"content": {"application/json": {"schema": {"$ref": ref}}}},
                "responses": {"201": {}},
            },
        }
        paths[f"{scope}/{resource.plural}/{{name}}"] = _operations(resource, ref)
        if resource.status:
            paths[f"{scope}/{resource.plural}/{{name}}/status"] = _operations(resource, ref)
    return {
        "openapi": "3.0.0",
        "info": {"title": _TITLE, "version": _VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }
