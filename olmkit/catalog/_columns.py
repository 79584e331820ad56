"""Every bundle of a catalog as columns: the form the graph compiler reads without objects.

A catalog's bundles carry few *distinct* properties (a requirement is shared by many
bundles), so the columns number each bundle's property occurrences by distinct property:
``(type, JSON text)``, the text written by :func:`orjson.dumps` with the key order as read.
The loader fills the columns straight from the parsed blobs (no :class:`~olmkit.model.Bundle`
per bundle); :func:`build_columns` builds equal ones from any catalog's bundles, the general
and reference builder.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any, Final

import attrs
import orjson

from olmkit.model import Bundle

__all__ = ["EXACT", "BundleColumns", "build_columns"]

#: orjson options of the distinct properties' texts: a value that is not plain JSON (a
#: datetime, a dataclass, a subclass of str) fails instead of becoming text.
EXACT: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS

_loads = orjson.loads


@attrs.frozen(slots=True)
class BundleColumns:
    """Every bundle of a catalog as columns.

    In the order ``catalog.bundles`` iterates them: package by package in catalog order,
    each package's bundles in its order. Bundle ``i``'s properties are
    ``prop_ref[prop_start[i]:prop_start[i + 1]]`` in property order, each the index of a
    distinct property: ``(dist_type[d], dist_json[d])``.
    """

    packages: list[str]
    bundle_package: array[int]  # 'i', per bundle: index into packages
    bundle_name: list[str]
    bundle_version: list[str | None]  # exactly Bundle.version
    bundle_image: list[str | None]  # exactly Bundle.image
    prop_start: array[int]  # 'i', n_bundles + 1
    prop_ref: array[int]  # 'i', per property occurrence: its distinct property
    dist_type: list[str]
    dist_json: list[bytes]
    _values: dict[int, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def __len__(self) -> int:
        """The number of bundles."""
        return len(self.bundle_name)

    def value(self, d: int) -> Any:
        """The decoded value of distinct property ``d`` (decoded once; do not change it)."""
        values = self._values
        found = values.get(d, values)
        if found is values:
            found = values[d] = _loads(self.dist_json[d])
        return found

    def values(self, ds: list[int]) -> list[Any]:
        """The decoded values of distinct properties ``ds``, decoded at once (new objects, not kept)."""
        return _loads(b"".join((b"[", b",".join([self.dist_json[d] for d in ds]), b"]")))  # type: ignore[no-any-return]


def _plain(value: Any, data: bytes) -> bool:
    """Whether ``value`` reads back from its text as itself (NaN and infinities do not)."""
    return bool(_loads(data) == value) if type(value) is not str else True


def build_columns(bundles: Mapping[str, Mapping[str, Bundle]]) -> BundleColumns | None:
    """The columns of ``bundles`` (``package -> name -> bundle``), or ``None`` when a value is not plain JSON.

    Not plain JSON: a value orjson cannot write with :data:`EXACT` (a YAML date, an
    integer beyond 64 bits, a key that is not a string) or that does not read back equal
    (a float NaN, a tuple).
    """
    packages = list(bundles)
    bundle_package = array("i")
    names: list[str] = []
    versions: list[str | None] = []
    images: list[str | None] = []
    starts = array("i", [0])
    refs = array("i")
    dist_type: list[str] = []
    dist_json: list[bytes] = []
    by_object: dict[int, int] = {}  # the loader interns equal properties: one text per object
    by_key: dict[tuple[str, bytes], int] = {}
    dumps = orjson.dumps
    for number, per in enumerate(bundles.values()):
        for bundle in per.values():
            bundle_package.append(number)
            names.append(bundle.name)
            versions.append(bundle.version)
            images.append(bundle.image)
            for prop in bundle.properties:
                d = by_object.get(id(prop))
                if d is None:
                    try:
                        data = dumps(prop.value, option=EXACT)
                    except TypeError:
                        return None
                    if not _plain(prop.value, data):
                        return None
                    key = (prop.type, data)
                    d = by_key.get(key)
                    if d is None:
                        d = by_key[key] = len(dist_type)
                        dist_type.append(prop.type)
                        dist_json.append(bytes(memoryview(data)))  # compact: orjson keeps a larger buffer
                    by_object[id(prop)] = d
                refs.append(d)
            starts.append(len(refs))
    return BundleColumns(packages, bundle_package, names, versions, images, starts, refs, dist_type, dist_json)
