"""olmkit-image-policy: operators run only images from approved registries, pinned by digest.

The policy is a ConfigMap named ``olmkit-image-policy`` in the ``olm`` namespace, so a
platform team manages it like any other cluster object::

    apiVersion: v1
    kind: ConfigMap
    metadata: {name: olmkit-image-policy, namespace: olm}
    data:
      allowedRegistries: |
        registry.example.com/*
        quay.io/acme/*
      requireDigest: "true"

``allowedRegistries`` holds shell-style patterns (one a line, ``#`` comments) matched against
the whole image reference; ``*`` matches any text, ``/`` included. ``requireDigest: "true"``
also asks for every image to be pinned (``...@sha256:<64 hex>``). Without the ConfigMap the
plugin refuses nothing.

The check judges every ClusterServiceVersion that enters the cluster: the images of its
deployments' containers and init containers, its ``spec.relatedImages``, and the bundle
image of the InstallPlan that installs it (a local bundle directory is not an image and is
not judged). A refused bundle's InstallPlan fails with ``InstallCheckFailed`` and a message
naming each image and the rule it breaks, which the Subscription reports as
``InstallPlanFailed``; ``olmkit apply`` of such a CSV is refused the same way.

Everything here goes through olmkit's public API: the ``olmkit_admission_checks`` hook and
the :class:`~olmkit.lifecycle.admission.AdmissionContext` it is called with.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from olmkit import hookimpl
from olmkit.types import AdmissionCheck

__all__ = ["CONFIG_MAP", "NAMESPACE", "Policy", "check_csv", "images_of"]

CONFIG_MAP = "olmkit-image-policy"
NAMESPACE = "olm"
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_LOCAL = ("/", "./", "../", "file:")


@attrs.frozen
class Policy:
    """What images may run: registry patterns, and whether a digest is required."""

    allowed: tuple[str, ...] = ()
    require_digest: bool = False
    source: str = f"{NAMESPACE}/{CONFIG_MAP}"

    @classmethod
    def from_config_map(cls, obj: Mapping[str, Any]) -> Policy:
        """Read a policy ConfigMap's ``data``.

        Raises:
            ValueError: ``requireDigest`` is neither ``"true"`` nor ``"false"``.
        """
        data = obj.get("data") or {}
        lines = str(data.get("allowedRegistries") or "").splitlines()
        allowed = tuple(p for p in (line.split("#", 1)[0].strip() for line in lines) if p)
        flag = str(data.get("requireDigest") or "false").strip().lower()
        if flag not in ("true", "false"):
            raise ValueError(f'requireDigest must be "true" or "false", not {flag!r}')
        meta = obj.get("metadata") or {}
        return cls(allowed, flag == "true", f"{meta.get('namespace', NAMESPACE)}/{meta.get('name', CONFIG_MAP)}")

    def problems(self, image: str, where: str) -> Iterator[str]:
        """Why ``image`` (found at ``where``) breaks the policy; nothing when it does not."""
        if self.allowed and not any(fnmatch.fnmatchcase(image, pattern) for pattern in self.allowed):
            yield (
                f"image {image} ({where}) is not from an allowed registry "
                f"({', '.join(self.allowed)}; image policy {self.source})"
            )
        if self.require_digest and not _DIGEST.search(image):
            yield f"image {image} ({where}) is not pinned by digest (image policy {self.source})"


def images_of(csv: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Every image a CSV runs or names: ``(image, where)`` pairs, in manifest order."""
    spec = csv.get("spec") or {}
    install = (spec.get("install") or {}).get("spec") or {}
    for d, deployment in enumerate(install.get("deployments") or ()):
        pod = (((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        for field in ("initContainers", "containers"):
            for c, container in enumerate(pod.get(field) or ()):
                image = (container or {}).get("image")
                if isinstance(image, str) and image:
                    yield image, f"deployment {(deployment or {}).get('name', d)} {field}[{c}]"
    for r, related in enumerate(spec.get("relatedImages") or ()):
        image = (related or {}).get("image")
        if isinstance(image, str) and image:
            yield image, f"relatedImages[{r}]"


def _policy(context: Any) -> Policy | None:
    store = getattr(context, "store", None)
    if store is None:
        return None
    from olmkit.store import NotFound  # here, not at import: registering the plugin imports no store

    try:
        obj = store.get("v1", "ConfigMap", CONFIG_MAP, NAMESPACE)
    except NotFound:
        return None
    return Policy.from_config_map(obj)


def check_csv(csv: Mapping[str, Any], context: Any) -> Iterator[str]:
    """The admission check: one message per image that breaks the policy."""
    try:
        policy = _policy(context)
    except ValueError as exc:
        yield f"the image policy {NAMESPACE}/{CONFIG_MAP} is invalid: {exc}"
        return
    if policy is None:
        return
    seen = set()
    bundle_image = getattr(context, "bundle_image", None)
    if isinstance(bundle_image, str) and bundle_image and not bundle_image.startswith(_LOCAL):
        seen.add(bundle_image)
        yield from policy.problems(bundle_image, f"bundle image of {context.bundle}")
    for image, where in images_of(csv):
        if image not in seen:
            seen.add(image)
            yield from policy.problems(image, where)


@hookimpl
def olmkit_admission_checks() -> Iterator[AdmissionCheck]:
    yield AdmissionCheck(
        name="image-policy",
        check=check_csv,
        kinds={"ClusterServiceVersion.operators.coreos.com"},
        description="images from allowed registries only, pinned by digest when required",
    )
