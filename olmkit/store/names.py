"""What Kubernetes accepts as object and namespace names.

``metadata.name`` is an RFC 1123 subdomain (at most 253 characters); a namespace name is a
DNS-1123 label (no dots, at most 63 characters). The store, ``apply`` and the command-line
options check names with these, so they never disagree.

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["DEFAULT_NAMESPACE", "NAMESPACE_NAME", "OBJECT_NAME", "is_namespace_name", "is_object_name"]

#: The namespace of namespaced objects and commands that name none.
DEFAULT_NAMESPACE: Final = "default"

#: ``metadata.name``: lower-case letters, digits, ``-`` and ``.``, alphanumeric at both ends.
OBJECT_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
#: a namespace name: lower-case letters, digits and ``-``, alphanumeric at both ends, at most 63.
NAMESPACE_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def is_object_name(name: object) -> bool:
    """Whether ``name`` is a valid ``metadata.name`` (RFC 1123 subdomain)."""
    return isinstance(name, str) and len(name) <= 253 and OBJECT_NAME.match(name) is not None


def is_namespace_name(name: object) -> bool:
    """Whether ``name`` is a valid namespace name (DNS-1123 label)."""
    return isinstance(name, str) and NAMESPACE_NAME.match(name) is not None
