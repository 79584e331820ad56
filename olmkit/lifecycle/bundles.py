"""Bundle content: the manifests an InstallPlan installs, obtained through plugins.

Upstream OLM unpacks bundle images with a Job; olmkit asks the ``olmkit_bundle_content``
hook (the built-in plugin reads inline manifest properties and bundle directories). A
chosen bundle whose content nobody can provide fails with :class:`BundleUnpackError`
naming the bundle, which becomes the subscription's ``BundleUnpackFailed`` condition.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from olmkit.errors import OlmkitError
from olmkit.lifecycle.kinds import CRD, CSV

__all__ = ["BundleContent", "BundleUnpackError", "bundle_content"]


@attrs.define(auto_exc=True, eq=False)
class BundleUnpackError(OlmkitError):
    """A bundle's manifests could not be obtained.

    Args:
        message: what went wrong.
        bundle: the bundle's name.
        image: the bundle's image reference, if any.
    """

    bundle: str = attrs.field(default="", kw_only=True)
    image: str | None = attrs.field(default=None, kw_only=True)

    def __str__(self) -> str:
        where = f"bundle {self.bundle}" + (f" (image {self.image})" if self.image else "")
        return f"{where}: {self.message}"


@attrs.frozen
class BundleContent:
    """A bundle's manifests, split by role."""

    csv: dict[str, Any]
    crds: tuple[dict[str, Any], ...] = ()
    objects: tuple[dict[str, Any], ...] = ()


def bundle_content(pm: Any, bundle: Any, *, name: str = "", image: str | None = None) -> BundleContent:
    """Get a bundle's manifests through the ``olmkit_bundle_content`` hook and split them.

    Args:
        pm: the plugin manager.
        bundle: the :class:`~olmkit.model.Bundle` (``None`` when the catalog no longer has it).
        name: the bundle's name (for messages when ``bundle`` is ``None``).
        image: its image (for messages when ``bundle`` is ``None``).

    Raises:
        BundleUnpackError: no plugin provides the content, or it is not one CSV plus objects.
    """
    name = getattr(bundle, "name", None) or name
    image = getattr(bundle, "image", None) or image
    if bundle is None:
        raise BundleUnpackError("the bundle is no longer in its catalog", bundle=name, image=image)
    try:
        manifests = pm.hook.olmkit_bundle_content(bundle=bundle, registry=pm.registry)
    except BundleUnpackError:
        raise
    except OlmkitError as exc:
        raise BundleUnpackError(str(exc), bundle=name, image=image) from exc
    if manifests is None:
        raise BundleUnpackError(
            "no content: the bundle carries no inline manifests and no plugin can unpack its image",
            bundle=name,
            image=image,
        )
    csvs, crds, objects = [], [], []
    for obj in manifests:
        if not isinstance(obj, Mapping) or not obj.get("kind"):
            raise BundleUnpackError("a manifest is not a Kubernetes object", bundle=name, image=image)
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if obj["kind"] == CSV.kind and group == CSV.group:
            csvs.append(dict(obj))
        elif obj["kind"] == CRD.kind and group == CRD.group:
            crds.append(dict(obj))
        else:
            objects.append(dict(obj))
    if len(csvs) != 1:
        raise BundleUnpackError(
            f"expected exactly one ClusterServiceVersion, found {len(csvs)}", bundle=name, image=image
        )
    return BundleContent(csvs[0], tuple(crds), tuple(objects))
