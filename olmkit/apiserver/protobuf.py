"""Kubernetes protobuf request bodies for the few kinds kubectl's typed commands create.

``kubectl create namespace``, ``create configmap``, ``create secret`` and ``create serviceaccount`` send their object as
``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` magic, then a ``runtime.Unknown``
envelope (type meta and the raw object). This decodes those kinds (the fields of
``ObjectMeta`` a client sets on create, plus each kind's own) into the JSON shape; any other
kind is refused with 415, as a server that does not speak protobuf for it would.

.. versionadded:: 0.2
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["MAGIC", "ProtobufError", "decode"]

MAGIC: Final = b"k8s\x00"


class ProtobufError(ValueError):
    """The body is not a protobuf object this server decodes."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)``: ints for varints, bytes for length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise ProtobufError("a string is not UTF-8") from None


def _raw(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError("expected bytes")
    return value


def _entry(value: int | bytes, decode_value: Callable[[int | bytes], Any]) -> tuple[str, Any]:
    key, item = "", None
    for number, field in _fields(_raw(value)):
        if number == 1:
            key = _text(field)
        elif number == 2:
            item = decode_value(field)
    return key, item


def _metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace"}
    for number, value in _fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, item = _entry(value, _text)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = item
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _bytes_b64(value: int | bytes) -> str:
    return base64.b64encode(_raw(value)).decode()


def _namespace(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number == 1:
            obj["metadata"] = _metadata(_raw(value))
        elif number == 2:
            finalizers = [_text(v) for n, v in _fields(_raw(value)) if n == 1]
            obj["spec"] = {"finalizers": finalizers} if finalizers else {}
    return obj


def _config_map(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number == 1:
            obj["metadata"] = _metadata(_raw(value))
        elif number == 2:
            key, item = _entry(value, _text)
            obj.setdefault("data", {})[key] = item
        elif number == 3:
            key, item = _entry(value, _bytes_b64)
            obj.setdefault("binaryData", {})[key] = item
        elif number == 4:
            obj["immutable"] = bool(value)
    return obj


def _secret(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number == 1:
            obj["metadata"] = _metadata(_raw(value))
        elif number == 2:
            key, item = _entry(value, _bytes_b64)
            obj.setdefault("data", {})[key] = item
        elif number == 3:
            obj["type"] = _text(value)
        elif number == 4:
            key, item = _entry(value, _text)
            obj.setdefault("stringData", {})[key] = item
        elif number == 5:
            obj["immutable"] = bool(value)
    return obj


def _service_account(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number == 1:
            obj["metadata"] = _metadata(_raw(value))
        elif number == 4:
            obj["automountServiceAccountToken"] = bool(value)
    return obj


_KINDS: Final[dict[tuple[str, str], Callable[[bytes], dict[str, Any]]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _config_map,
    ("v1", "Secret"): _secret,
    ("v1", "ServiceAccount"): _service_account,
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON shape of a protobuf-encoded object.

    Raises:
        ProtobufError: not the Kubernetes protobuf envelope, or a kind this module does not decode.
    """
    if not body.startswith(MAGIC):
        raise ProtobufError("not a Kubernetes protobuf object (no k8s magic)")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1:
            for n, v in _fields(_raw(value)):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2:
            raw = _raw(value)
    decoder = _KINDS.get((api_version, kind))
    if decoder is None:
        raise ProtobufError(f"protobuf bodies of {kind or '?'} ({api_version or '?'}) are not supported; send JSON")
    return {"apiVersion": api_version, "kind": kind, **decoder(raw)}
