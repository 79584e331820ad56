"""Catalog validation: everything ``opm validate`` checks, and more, all problems at once.

Errors (the catalog is invalid):

* blobs that cannot be read as their schema, duplicates, blobs without a schema,
  unknown ``olm.`` schemas (found while loading);
* a package without its package blob, a missing or unknown default channel, a package
  name that is not a DNS-1123 label;
* channels without exactly one head, ``replaces`` cycles, stranded bundles (neither on
  the replaces chain from the head nor skipped by it), entries naming bundles the
  package does not have;
* bundles in no channel, bundles without exactly one identity property or whose
  identity names another package, duplicate versions in a package, bundles with neither
  an image nor inline content (opm's "bundle image must be set");
* every property of a registered type is parsed and validated by its plugin (invalid
  semver, malformed values, constraint size, CEL compile errors ...);
* deprecations naming bundles or channels that do not exist.

Warnings: unknown property types (a mistyped type is silently ignored upstream),
requirements nothing in the catalog provides (one warning per package and requirement,
naming every bundle that carries it), ``skips`` naming missing bundles, a ``skipRange``
that does not parse (OLM silently ignores it, e.g. ``<v1.13.0``, and the real community
catalog carries such ranges), upgrade dead ends: entries whose upgrades, as the resolver
offers them, never reach the channel head (one warning per bundle where such paths stop,
naming the entries and why nothing upgrades it).

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
from collections.abc import Callable, Hashable, Iterator, Mapping
from itertools import compress
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import orjson

from olmkit.catalog import _fork
from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog._fast import NOT_PARSED, LazyBundles
from olmkit.catalog._load import _cache_path, _load
from olmkit.catalog._writes import deferring, write_later
from olmkit.catalog.graph import dead_ends
from olmkit.catalog.problems import ERROR, WARNING, Problem
from olmkit.catalog.semver import identity_in_range, parse_range, parse_version
from olmkit.errors import CatalogError
from olmkit.model import Bundle, Channel, Origin, Property
from olmkit.registry import Registry
from olmkit.serde import SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE
from olmkit.types import PackageIdentity, PropertyType

__all__ = ["validate_catalog", "validate_path"]

_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NO_BUNDLES: Final[Mapping[str, Bundle]] = MappingProxyType({})


class _Context:
    """What requirement builders need: nested constraints through the registered evaluators."""

    def __init__(self, registry: Registry, bundle: str) -> None:
        self.registry = registry
        self.bundle = bundle

    def build_constraint(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("a constraint must be an object")
        keys = [k for k in value if k in self.registry.constraint_evaluators]
        if len(keys) != 1:
            raise ValueError(
                f"a constraint needs exactly one of: {', '.join(sorted(self.registry.constraint_evaluators))}"
            )
        return self.registry.constraint_evaluators[keys[0]].build(value[keys[0]], self)


class _View:
    """A catalog bundle as predicates see it (values parsed once per type)."""

    __slots__ = ("_bundle", "_catalog", "_values")

    def __init__(self, catalog: Catalog, bundle: Bundle) -> None:
        self._catalog = catalog
        self._bundle = bundle
        self._values: dict[str, tuple[Any, ...]] = {}

    @property
    def name(self) -> str:
        return self._bundle.name

    @property
    def package(self) -> str:
        return self._bundle.package

    @property
    def version(self) -> str | None:
        return self._bundle.version

    @property
    def properties(self) -> tuple[Any, ...]:
        return self._bundle.properties

    def values(self, type_name: str) -> tuple[Any, ...]:
        found = self._values.get(type_name)
        if found is None:
            found = self._values[type_name] = self._catalog.values(self._bundle, type_name)
        return found


def _bundle_problem(severity: str, message: str, bundle: Bundle | _Row, field: str | None = None) -> Problem:
    o = bundle.origin
    return Problem(
        severity,
        message,
        path=o.path if o else None,
        line=o.line if o else None,
        package=bundle.package,
        blob=f"{SCHEMA_BUNDLE} {bundle.name}",
        field=field,
    )


def _channel_problem(severity: str, message: str, channel: Channel, field: str | None = None) -> Problem:
    o = channel.origin
    return Problem(
        severity,
        message,
        path=o.path if o else None,
        line=o.line if o else None,
        package=channel.package,
        blob=f"{SCHEMA_CHANNEL} {channel.name}",
        field=field,
    )


def validate_catalog(
    catalog: Catalog, registry: Registry, problems: tuple[Problem, ...] = (), *, jobs: int | None = None
) -> list[Problem]:
    """Check a catalog; returns every problem found (errors and warnings), load problems first.

    Args:
        catalog: the catalog (from :func:`~olmkit.catalog.load_catalog_result`).
        registry: the plugin registry: every registered property type's ``parse`` and
            ``validate`` run on the properties of that type.
        problems: problems already found while loading.
        jobs: ``1`` checks in this process; ``2`` lets a forked child check the second
            half of the packages at the same time (same problems, same order); ``None``
            does that for catalogs of :data:`PARALLEL_MIN_BUNDLES` bundles or more when
            the platform can fork, the process runs a single thread and the machine's
            load leaves a processor free.

    .. versionchanged:: 0.1
       ``jobs``.

    .. versionchanged:: 0.2
       ``jobs=None`` checks serially when the machine is busy.
    """
    return _validate_catalog(catalog, registry, problems, jobs=jobs)[0]


def _validate_catalog(
    catalog: Catalog,
    registry: Registry,
    problems: tuple[Problem, ...],
    *,
    jobs: int | None,
    then: Callable[[], object] | None = None,
) -> tuple[list[Problem], bool]:
    """:func:`validate_catalog`; ``then`` runs in the forked child after it checked its half.

    Returns:
        the problems, and whether a child took ``then`` over (else the caller does it).
    """
    enabled = gc.isenabled()
    gc.disable()  # bulk work on a large heap: full collections would dominate the run time
    try:
        names = sorted(set(catalog.bundles) | set(catalog.channels) | set(catalog.packages))
        state = _State()
        split = _split(catalog, names, jobs, extra=_WRITE_COST if then is not None else 0.0)
        if split is None:
            return [*problems, *_validate(catalog, registry, names, state)], False
        first, second = names[:split], names[split:]
        child = _fork.start(lambda: _rows(catalog, registry, second), then)
        try:
            found = _validate(catalog, registry, first, state)
        except BaseException:
            if child is not None:
                child.cancel()
            raise
        # not waiting for the child's exit (the kernel takes back the pages it copied: up to
        # 0.03 s at 200k bundles); with a "then" (the cache write) it goes on after sending
        # its rows. Either way :func:`_fork.wait_background` reaps it (next load, exit).
        rows = child.result(reap=False) if child is not None else None
        if rows is None:  # no child, or it failed: check its half here
            return [*problems, *found, *_validate(catalog, registry, second, state)], False
        rest = [Problem(*row) for row in rows]
        return [*problems, *found, *rest], then is not None
    finally:
        if enabled:
            gc.enable()


#: Catalogs with at least this many bundles are checked by two processes when possible.
PARALLEL_MIN_BUNDLES: Final = 5000
#: Writing the catalog cache costs about this share of checking the whole catalog (measured
#: on a generated catalog of 40k bundles): the child that writes it after checking
#: gets that much less to check, so that both processes finish together.
_WRITE_COST: Final = 0.5
#: A bundle checked by the forked child costs about this many times what it costs the
#: parent (measured at 40k and 200k bundles: 1.03-1.09 in wall time; the child's first
#: writes copy the shared pages it touches): the child gets that much fewer bundles.
_CHILD_COST: Final = 1.05


#: What a distinct property says: (identity?, package its identity names, unknown type?,
#: problems, requirement to check?)
_Verdict = tuple[bool, str | None, bool, tuple[tuple[str, str], ...], bool]


class _State:
    """What checking remembers across packages (and across the halves of a serial run)."""

    __slots__ = (
        "distinct",
        "equal_versions",
        "programs",
        "requirements",
        "unknown_seen",
        "verdicts",
        "version_keys",
        "views",
    )

    def __init__(self) -> None:
        #: the distinct properties' parsed values (a catalog read into columns)
        self.distinct: _Distinct | None = None
        # what a distinct property says, computed once (properties are interned by the loader);
        # equal verdicts are one tuple (a large catalog has hundreds of thousands)
        self.verdicts: dict[int, _Verdict] = {}
        #: id(requirement property) -> what checking it found: None (satisfied or no verdict),
        #: (ERROR, message) or (WARNING, the predicate's text)
        self.requirements: dict[int, tuple[str, str] | None] = {}
        self.unknown_seen: set[tuple[str, str]] = set()
        self.views: dict[int, _View | _RowView] = {}
        self.programs: _Programs | None = None  # a catalog in columns: predicates' programs run on it
        #: a bundle version's text -> the number of its version (None: invalid), see _version_clash
        self.version_keys: dict[str, int | None] = {}
        self.equal_versions: dict[Any, int] = {}


def _split(catalog: Catalog, names: list[str], jobs: int | None, *, extra: float = 0.0) -> int | None:
    """Where to cut ``names`` in two parts of about equal work, or ``None`` to run serially.

    The work of a part is its bundle count (the second part's, checked by the forked
    child, :data:`_CHILD_COST` times that); the second part's process also has ``extra``
    times the whole catalog's checking to do afterwards, so it gets that much less.
    """
    if jobs == 1 or len(names) < 2 or not _fork.can_fork():
        return None
    lazy = _columns_of(catalog)
    if lazy is None:
        sizes = [len(catalog.bundles.get(n, _NO_BUNDLES)) for n in names]
    else:
        sizes = [len(lazy.span(n)) for n in names]
    total = sum(sizes)
    if jobs is None and (total < PARALLEL_MIN_BUNDLES or not _fork.spare_cpu()):
        return None
    # first part: p of the bundles such that p = (1 - p) * _CHILD_COST + extra
    share = min((_CHILD_COST + extra) / (1.0 + _CHILD_COST), 0.9)
    running = 0
    for i, size in enumerate(sizes):
        running += size
        if running >= total * share:
            return min(max(i + 1, 1), len(names) - 1)
    return len(names) - 1


def _rows(catalog: Catalog, registry: Registry, names: list[str]) -> list[tuple[Any, ...]]:
    """Check ``names`` and return the problems as rows."""
    state = _State()
    return [
        (p.severity, p.message, p.path, p.line, p.package, p.blob, p.field)
        for p in _validate(catalog, registry, names, state)
    ]


class _Verdicts:
    """What each distinct property says, computed once (see :data:`_Verdict`)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.types = registry.property_types
        self.identity = frozenset(registry.identity_types)
        self.plain: _Verdict = (False, None, False, (), False)  # nothing to check or report: most properties
        # equal verdicts are one tuple (a large catalog has hundreds of thousands)
        self.unknown: _Verdict = (False, None, True, (), False)  # a type no plugin registers
        self.requirement: _Verdict = (False, None, False, (), True)  # a valid requirement
        self.canonical: dict[_Verdict, _Verdict] = {v: v for v in (self.plain, self.unknown, self.requirement)}
        self.inline = registry.inline_types
        #: identity type -> whether its package, and its version, decide what its validate says
        self.validated_by: dict[str, tuple[bool, bool]] = {}
        for name in self.identity:
            pt = self.types.get(name)
            fields = pt.fields if pt is not None else None
            if fields is not None and fields.validated_by is not None and len(fields.fields) >= 2:
                self.validated_by[name] = (
                    fields.fields[0] in fields.validated_by,
                    fields.fields[1] in fields.validated_by,
                )
        #: (identity type, package, version as validated_by leaves them) -> what validate says
        self.identity_problems: dict[tuple[str, str | None, str | None], tuple[tuple[str, str], ...]] = {}

    def verdict(self, type_name: str, parsed: Callable[[Any], Any], prop: Any) -> _Verdict:
        """The verdict on a property of ``type_name`` whose value ``parsed(prop)`` parses."""
        return self.same(self._verdict(type_name, parsed, prop))

    def same(self, v: _Verdict) -> _Verdict:
        """The one tuple equal to ``v`` (verdicts are compared by identity)."""
        return self.canonical.setdefault(v, v)

    def identity_verdict(self, type_name: str, package: str, version: str | None) -> _Verdict:
        """:meth:`verdict` on an identity property of ``type_name`` that parses to
        ``PackageIdentity(package, version)``.

        A type whose ``fields`` say which of package and version decide what its
        ``validate`` says is validated once per distinct value of those.
        """
        key: tuple[str, str | None, str | None] = (type_name, package, version)
        by = self.validated_by.get(type_name)
        if by is not None:
            key = (type_name, package if by[0] else None, version if by[1] else None)
        pt = self.types.get(type_name)
        if pt is None:  # no plugin registers the type
            return self.same((True, package, True, (), False))
        found = self.identity_problems.get(key)
        if found is None:  # what ``validate`` says of PackageIdentity(package, version)
            found = self.identity_problems[key] = tuple(
                _value_problems(pt, type_name, PackageIdentity(package, version))
            )
        return self.same((True, package, False, found, pt.requirement is not None and not found))

    def _verdict(self, type_name: str, parsed: Callable[[Any], Any], prop: Any) -> _Verdict:
        pt = self.types.get(type_name)
        is_identity = type_name in self.identity
        named: str | None = None
        if pt is None and not is_identity:
            return (False, None, True, (), False)
        found: list[tuple[str, str]] = []
        try:
            value = parsed(prop)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            if pt is None:
                return (is_identity, named, True, (), False)
            found.append((ERROR, f"invalid {type_name} value: {exc}"))
        else:
            if is_identity:
                try:
                    named = getattr(value, "package", None)
                except (ValueError, TypeError, AttributeError, KeyError):
                    named = None
            if pt is None:
                return (is_identity, named, True, (), False)
            found = _value_problems(pt, type_name, value)
        return (is_identity, named, False, tuple(found), pt.requirement is not None and not found)


def _value_problems(pt: PropertyType, type_name: str, value: Any) -> list[tuple[str, str]]:
    """What ``pt.validate`` says of a parsed value of ``type_name`` (a validator that raises says that)."""
    if pt.validate is None:
        return []
    try:
        return [(ERROR, f"invalid {type_name} value: {msg}") for msg in pt.validate(value)]
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return [(ERROR, f"invalid {type_name} value: {exc}")]


def _validate(catalog: Catalog, registry: Registry, names: list[str], state: _State) -> list[Problem]:
    out: list[Problem] = []
    verdicts = _Verdicts(registry)
    lazy = _columns_of(catalog)
    for pkg_name in names:
        package = catalog.packages.get(pkg_name)
        channels = catalog.channels.get(pkg_name, {})
        bundles: Mapping[str, Any]
        objects: Mapping[str, Bundle] = _NO_BUNDLES
        rows_of: dict[str, int] = {}
        versions: Mapping[str, str | None] | None = None  # Catalog.versions, read once for every channel
        if lazy is None:
            bundles = objects = catalog.bundles.get(pkg_name, _NO_BUNDLES)
            first_origin = next((b.origin for b in objects.values()), None)
        else:
            rows = lazy.span(pkg_name)
            bundles = rows_of = dict(zip(map(lazy.columns.bundle_name.__getitem__, rows), rows, strict=True))
            versions = catalog.versions(pkg_name)
            first_origin = lazy.origin(rows[0]) if rows else None
        if package is None:
            if first_origin is None:
                first_origin = next((c.origin for c in channels.values()), None)
            o = first_origin
            out.append(
                Problem(
                    ERROR,
                    f"package {pkg_name!r} has channels or bundles but no {SCHEMA_PACKAGE} blob",
                    path=o.path if o else None,
                    line=o.line if o else None,
                    package=pkg_name,
                )
            )
        else:
            po = package.origin
            where: dict[str, Any] = {
                "path": po.path if po else None,
                "line": po.line if po else None,
                "package": pkg_name,
                "blob": f"{SCHEMA_PACKAGE} {pkg_name}",
            }
            if not _DNS1123_LABEL.fullmatch(pkg_name) or len(pkg_name) > 63:
                out.append(Problem(ERROR, f"package name {pkg_name!r} is not a DNS-1123 label", field="name", **where))
            if not package.default_channel:
                out.append(Problem(ERROR, "defaultChannel is required", field="defaultChannel", **where))
            elif package.default_channel not in channels:
                out.append(
                    Problem(
                        ERROR,
                        f"default channel {package.default_channel!r} does not exist"
                        + (
                            f" (channels: {', '.join(sorted(channels))})"
                            if channels
                            else " (the package has no channels)"
                        ),
                        field="defaultChannel",
                        **where,
                    )
                )

        in_channel: set[str] = set()
        for channel in channels.values():
            _validate_channel(catalog, channel, bundles, out, in_channel, versions)
        if lazy is None:
            _check_bundles(catalog, registry, pkg_name, objects, in_channel, verdicts, state, out)
        else:
            _check_rows(catalog, lazy, registry, pkg_name, rows_of, in_channel, verdicts, state, out)
        deprecation = catalog.deprecations.get(pkg_name)
        if deprecation is not None:
            out += _deprecation_problems(deprecation, channels, bundles)
    return out


def _columns_of(catalog: Catalog) -> LazyBundles | None:
    """The catalog's bundles when they were read into columns (checked there, not as objects)."""
    bundles = catalog.bundles
    return bundles if isinstance(bundles, LazyBundles) else None


def _image_problem(registry: Registry, bundle: Any) -> Problem:
    inline = registry.inline_types
    return _bundle_problem(
        ERROR,
        "bundle image must be set: the bundle has neither an image nor inline content"
        + (f" ({' or '.join(sorted(inline))} properties)" if inline else ""),
        bundle,
        "image",
    )


def _identity_problems(registry: Registry, identities: int, bundle: Any) -> list[Problem]:
    identity = registry.identity_types
    if identities == 1 or not identity:
        return []
    wanted = " or ".join(sorted(identity))
    return [
        _bundle_problem(
            ERROR, f"a bundle needs exactly one {wanted} property, found {identities}", bundle, "properties"
        )
    ]


def _version_clash(versions: dict[int, str], name: str, version: str | None, state: _State) -> str | None:
    """The message when another bundle of the package has the same version (``versions``: the
    number of a version -> the first bundle's name, filled as bundles are checked).

    Equal versions share a number; each version text is parsed once for the catalog
    (``state.version_keys``).
    """
    if not version:
        return None
    key = state.version_keys.get(version, NOT_PARSED)
    if key is NOT_PARSED:
        try:
            parsed = parse_version(version)
        except ValueError:
            key = None  # reported by the identity property's own validation
        else:
            equal = state.equal_versions
            key = equal.setdefault(parsed, len(equal))
        state.version_keys[version] = key
    if key is None:
        return None
    if key not in versions:
        versions[key] = name
        return None
    return f"version {version} is used by both {versions[key]!r} and {name!r}"


def _check_bundles(
    catalog: Catalog,
    registry: Registry,
    pkg_name: str,
    bundles: Mapping[str, Bundle],
    in_channel: set[str],
    verdicts: _Verdicts,
    state: _State,
    out: list[Problem],
) -> None:
    """Check a package's bundles, as objects."""
    inline = registry.inline_types
    plain = verdicts.plain
    known = state.verdicts
    requirements = state.requirements
    unknown_seen = state.unknown_seen
    versions: dict[int, str] = {}
    # id(requirement) -> the bundles carrying it that nothing satisfies (one warning per package)
    unsatisfied: dict[int, list[tuple[Any, int, str]]] = {}
    for bundle in bundles.values():
        if bundle.name not in in_channel:
            out.append(_bundle_problem(ERROR, f"bundle {bundle.name!r} is not in any channel", bundle))
        if not bundle.image and not any(p.type in inline for p in bundle.properties):
            out.append(_image_problem(registry, bundle))
        identities = 0
        for i, prop in enumerate(bundle.properties):
            pid = id(prop)
            v = known.get(pid)
            if v is None:
                v = verdicts.verdict(prop.type, catalog.parsed, prop)
                if not v[0]:  # an identity property is its bundle's own: it does not recur
                    known[pid] = v
            if v is plain:
                continue
            identities += v[0]
            if not _verdict_problems(v, prop.type, pkg_name, bundle, i, unknown_seen, out):
                continue
            if v[4]:
                if pid in requirements:
                    found = requirements[pid]
                else:
                    found = requirements[pid] = _check_requirement(catalog, registry, bundle, prop, state.views)
                _requirement_problem(found, pid, bundle, i, unsatisfied, out)
        out += _identity_problems(registry, identities, bundle)
        clash = _version_clash(versions, bundle.name, bundle.version, state)
        if clash is not None:
            out.append(_bundle_problem(ERROR, clash, bundle, "properties"))
    out += [_unsatisfied_problem(pkg_name, hits) for hits in unsatisfied.values()]


class _Row:
    """A bundle read into columns, as far as a problem names it (read from the columns when it does)."""

    __slots__ = ("_lazy", "_row", "package")

    def __init__(self, lazy: LazyBundles, row: int, package: str) -> None:
        self._lazy = lazy
        self._row = row
        self.package = package

    @property
    def name(self) -> str:
        return self._lazy.columns.bundle_name[self._row]

    @property
    def version(self) -> str | None:
        return self._lazy.columns.bundle_version[self._row]

    @property
    def origin(self) -> Origin:
        return self._lazy.origin(self._row)


class _Distinct:
    """The distinct properties of a catalog read into columns, each parsed once."""

    def __init__(self, catalog: Catalog, lazy: LazyBundles, identity: frozenset[str]) -> None:
        self.lazy = lazy
        self.columns = lazy.columns
        self.parse = catalog._parse
        #: identity property -> its (package, version), as the loader read them
        self.identities: dict[int, tuple[str, str | None]] = {}
        # what the loader parsed already; its identities are made here when asked, only
        # those of the bundles this process checks (not every one, as parsed_view does)
        self.loaded = lazy.parsed_so_far()
        dist_type = self.columns.dist_type
        ds = list(compress(range(len(dist_type)), map(identity.__contains__, dist_type)))
        read = lazy.identities(ds) if ds else None
        if read is not None:
            self.identities = dict(zip(ds, zip(*read, strict=True), strict=True))
        elif ds:
            self.loaded = lazy.parsed_view()
        self.values: dict[int, Any] = {}  # and what was parsed here for candidates
        self.last = -1  # the last distinct property parsed here, and its value
        self.last_value: Any = None
        #: per distinct property, its verdict once made
        self.verdicts: list[_Verdict | None] = [None] * len(self.columns.dist_type)

    def parsed(self, d: int) -> Any:
        """As :meth:`Catalog.parsed` of the property (a failure is raised again each time).

        Parsed here, the value is kept only until another is: a distinct property's verdict
        and its requirement's check, one after the other, are all that read most of them
        (see :meth:`kept`).
        """
        found = self.loaded.get(d, NOT_PARSED)
        if found is NOT_PARSED:
            found = self.values.get(d, NOT_PARSED)
        if found is NOT_PARSED:
            identity = self.identities.get(d)
            if identity is not None:
                return PackageIdentity(*identity)
        if found is NOT_PARSED:
            if d == self.last:
                return self.last_value
            pt = self.parse.get(self.columns.dist_type[d])
            value = orjson.loads(self.columns.dist_json[d])
            found = pt(value) if pt is not None else value  # a failure: raised again each time
            self.last, self.last_value = d, found
        return found

    def kept(self, d: int) -> Any:
        """:meth:`parsed`, kept for good (a candidate's values, which predicates read again and again)."""
        found = self.parsed(d)
        if d not in self.loaded:
            self.values[d] = found
        return found


def _check_rows(
    catalog: Catalog,
    lazy: LazyBundles,
    registry: Registry,
    pkg_name: str,
    rows: Mapping[str, int],
    in_channel: set[str],
    verdicts: _Verdicts,
    state: _State,
    out: list[Problem],
) -> None:
    """Check a package's bundles in columns: a verdict per distinct property, no bundle built.

    The same checks as :func:`_check_bundles`, in the same order, with the same texts.
    """
    inline = verdicts.inline
    plain = verdicts.plain
    # the verdicts that report nothing for a bundle of this package, checked by identity:
    # its own identity property, and an unknown type already reported for the package
    clean = verdicts.same((True, pkg_name, False, (), False))
    unknown, satisfiable = verdicts.unknown, verdicts.requirement
    reported: set[int] = set()  # properties of an unknown type already reported for the package
    has_identity = bool(verdicts.identity)
    c = lazy.columns
    dist_type, starts, refs = c.dist_type, c.prop_start, c.prop_ref
    images, bundle_versions = c.bundle_image, c.bundle_version
    distinct = state.distinct
    if distinct is None:
        distinct = state.distinct = _Distinct(catalog, lazy, verdicts.identity)
    known, read_identities = distinct.verdicts, distinct.identities
    requirements = state.requirements
    unknown_seen = state.unknown_seen
    versions: dict[int, str] = {}
    unsatisfied: dict[int, list[tuple[Any, int, str]]] = {}
    for name, row in rows.items():
        bundle: _Row | None = None
        if name not in in_channel:
            bundle = _Row(lazy, row, pkg_name)
            out.append(_bundle_problem(ERROR, f"bundle {name!r} is not in any channel", bundle))
        ds = refs[starts[row] : starts[row + 1]]
        if not images[row] and not any(dist_type[d] in inline for d in ds):
            bundle = bundle or _Row(lazy, row, pkg_name)
            out.append(_image_problem(registry, bundle))
        identities = 0
        for i, d in enumerate(ds):
            v = known[d]
            if v is None:
                identity = read_identities.get(d)
                if identity is not None:  # read by the loader: no parse to fail
                    v = known[d] = verdicts.identity_verdict(dist_type[d], *identity)
                else:
                    v = known[d] = verdicts.verdict(dist_type[d], distinct.parsed, d)
            if v is plain:
                continue
            if v is clean:
                identities += 1
                continue
            if v is satisfiable and requirements.get(d, v) is None:
                continue  # a requirement something satisfies
            if v is unknown and d in reported:
                continue
            bundle = bundle or _Row(lazy, row, pkg_name)
            identities += v[0]
            if not _verdict_problems(v, dist_type[d], pkg_name, bundle, i, unknown_seen, out):
                if v is unknown:
                    reported.add(d)  # the package's warning on its type is out
                continue
            if v[4]:
                if d in requirements:
                    found = requirements[d]
                else:
                    found = requirements[d] = _check_distinct(catalog, lazy, registry, name, d, state)
                _requirement_problem(found, d, bundle, i, unsatisfied, out)
        if identities != 1 and has_identity:
            out += _identity_problems(registry, identities, bundle or _Row(lazy, row, pkg_name))
        clash = _version_clash(versions, name, bundle_versions[row], state)
        if clash is not None:
            out.append(_bundle_problem(ERROR, clash, bundle or _Row(lazy, row, pkg_name), "properties"))
    out += [_unsatisfied_problem(pkg_name, hits) for hits in unsatisfied.values()]


def _verdict_problems(
    v: _Verdict,
    type_name: str,
    pkg_name: str,
    bundle: Any,
    i: int,
    unknown_seen: set[tuple[str, str]],
    out: list[Problem],
) -> bool:
    """Add the problems a property's verdict ``v`` states (property ``i`` of ``bundle``).

    Returns:
        Whether its checks go on: not for a property of an unknown type.
    """
    if v[0] and v[1] is not None and v[1] != pkg_name:
        out.append(_names_other_package(type_name, v[1], pkg_name, bundle, i))
    if v[2]:
        if (pkg_name, type_name) not in unknown_seen:
            unknown_seen.add((pkg_name, type_name))
            out.append(_unknown_type(type_name, bundle, i))
        return False
    for severity, message in v[3]:
        out.append(_bundle_problem(severity, message, bundle, f"properties[{i}].value"))
    return True


def _requirement_problem(
    found: tuple[str, str] | None,
    key: int,
    bundle: Any,
    i: int,
    unsatisfied: dict[int, list[tuple[Any, int, str]]],
    out: list[Problem],
) -> None:
    """Report requirement ``i`` of ``bundle`` as checked (``found``): an error now, a warning per package later."""
    if found is None:
        return
    if found[0] == ERROR:
        out.append(_bundle_problem(ERROR, found[1], bundle, f"properties[{i}].value"))
    else:
        unsatisfied.setdefault(key, []).append((bundle, i, found[1]))


def _names_other_package(type_name: str, named: str, pkg_name: str, bundle: Any, i: int) -> Problem:
    return _bundle_problem(
        ERROR,
        f"{type_name} names package {named!r}, but the bundle belongs to {pkg_name!r}",
        bundle,
        f"properties[{i}]",
    )


def _unknown_type(type_name: str, bundle: Any, i: int) -> Problem:
    return _bundle_problem(
        WARNING,
        f"unknown property type {type_name!r} (no plugin registers it; it is kept as an "
        "opaque value and ignored by resolution)",
        bundle,
        f"properties[{i}].type",
    )


def _deprecation_problems(deprecation: Deprecation, channels: Any, bundles: Any) -> list[Problem]:
    """Deprecations naming bundles or channels the package does not have (file, line and entry)."""
    data = deprecation.data or {}
    o = deprecation.origin
    where: dict[str, Any] = {
        "path": o.path if o else None,
        "line": o.line if o else None,
        "package": deprecation.package,
        "blob": f"{data.get('schema', '')} {deprecation.package}".strip(),
    }
    index: dict[tuple[Any, Any], int] = {}
    for i, entry in enumerate(data.get("entries") or ()):
        ref = entry.get("reference") if isinstance(entry, Mapping) else None
        if isinstance(ref, Mapping):
            index.setdefault((ref.get("schema"), ref.get("name")), i)
    out = []
    for what, names, known in (("bundle", deprecation.bundles, bundles), ("channel", deprecation.channels, channels)):
        schema = SCHEMA_BUNDLE if what == "bundle" else SCHEMA_CHANNEL
        for name in names:
            if name not in known:
                at = index.get((schema, name))
                out.append(
                    Problem(
                        ERROR,
                        f"deprecation names {what} {name!r}, which the package does not have",
                        field=f"entries[{at}].reference.name" if at is not None else "entries",
                        **where,
                    )
                )
    return out


def _validate_channel(
    catalog: Catalog,
    channel: Channel,
    bundles: Any,
    out: list[Problem],
    in_channel: set[str],
    versions: Mapping[str, str | None] | None = None,
) -> None:
    names = set()
    for i, entry in enumerate(channel.entries):
        if entry.name in names:
            out.append(_channel_problem(ERROR, f"entry {entry.name!r} appears twice", channel, f"entries[{i}].name"))
        names.add(entry.name)
        in_channel.add(entry.name)
        if entry.name not in bundles:
            out.append(
                _channel_problem(
                    ERROR,
                    f"entry {entry.name!r} names a bundle that package {channel.package!r} does not have",
                    channel,
                    f"entries[{i}].name",
                )
            )
        if entry.skip_range:
            try:
                parse_range(entry.skip_range)
            except ValueError as exc:
                # a warning, not an error: OLM drops an unparsable skipRange silently and
                # serves the catalog (the real community catalog carries 31 of them)
                out.append(
                    _channel_problem(
                        WARNING,
                        f"invalid skipRange, OLM ignores it so this entry skips nothing by range: {exc}",
                        channel,
                        f"entries[{i}].skipRange",
                    )
                )
        for skip in entry.skips:
            if skip not in bundles:
                out.append(
                    _channel_problem(
                        WARNING,
                        f"entry {entry.name!r} skips {skip!r}, which is not a bundle of package {channel.package!r}",
                        channel,
                        f"entries[{i}].skips",
                    )
                )
    if not channel.entries:
        out.append(_channel_problem(ERROR, "channel has no entries", channel, "entries"))
        return
    try:
        catalog.channel_order(channel.package, channel.name)
    except CatalogError as exc:
        out.append(_channel_problem(ERROR, str(exc), channel, "entries"))
        return
    # stranded: neither on the replaces chain from the head nor skipped by an entry on it
    by_name = {e.name: e for e in channel.entries}
    head = current = catalog.channel_head(channel.package, channel.name)
    reached: set[str] = set()
    covered: set[str] = set()
    while current is not None and current.name not in reached:
        reached.add(current.name)
        covered.update(current.skips)
        current = by_name.get(current.replaces) if current.replaces else None  # type: ignore[assignment]
    stranded = [e.name for e in channel.entries if e.name not in reached and e.name not in covered]
    if stranded:
        out.append(
            _channel_problem(
                ERROR,
                f"channel contains stranded bundles (not reachable from the head {head.name!r} by "
                f"replaces or skips): {', '.join(stranded)}",
                channel,
                "entries",
            )
        )
        return
    position: dict[str, int] = {}
    for stop, stuck in dead_ends(catalog, channel.package, channel.name, versions=versions):
        position = position or {e.name: i for i, e in enumerate(channel.entries)}
        if stuck == [stop.bundle]:
            what = f"{stop.bundle!r} can never reach the channel head {stop.head!r}, as {stop.reason}"
        else:
            what = (
                f"{len(stuck)} entries can never reach the channel head {stop.head!r}: their upgrades stop at "
                f"{stop.bundle!r}, as {stop.reason} (entries: {_names(stuck)})"
            )
        out.append(_channel_problem(WARNING, f"upgrade dead end: {what}", channel, f"entries[{position[stop.bundle]}]"))


def _names(names: list[str], shown: int = 10) -> str:
    """``a, b, c`` or, for a long list, the first ones and how many more."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[: shown - 2])} and {len(names) - shown + 2} more"


def _check_requirement(
    catalog: Catalog, registry: Registry, bundle: Bundle, prop: Property, views: dict[int, Any]
) -> tuple[str, str] | None:
    """What a requirement property says: ``(ERROR, message)`` when it does not build,
    ``(WARNING, predicate text)`` when nothing in the catalog satisfies it, else ``None``."""

    def candidates(lookup: tuple[str, Hashable]) -> Iterator[Any]:
        for candidate in reversed(catalog.lookup(*lookup)):  # newest first: most ranges are lower bounds
            view = views.get(id(candidate))
            if view is None:
                view = views[id(candidate)] = _View(catalog, candidate)
            yield view

    return _requirement_verdict(registry, prop.type, lambda: catalog.parsed(prop), bundle.name, candidates)


def _check_distinct(
    catalog: Catalog, lazy: LazyBundles, registry: Registry, bundle: str, d: int, state: _State
) -> tuple[str, str] | None:
    """:func:`_check_requirement` of distinct property ``d`` of a catalog in columns (candidates as rows)."""
    distinct = state.distinct
    assert distinct is not None
    programs = state.programs
    if programs is None:
        programs = state.programs = _Programs(catalog, lazy, distinct, state.views)
    view = programs.view

    def candidates(lookup: tuple[str, Hashable]) -> Iterator[Any]:
        return map(view, reversed(catalog.lookup_rows(*lookup) or ()))

    return _requirement_verdict(
        registry, lazy.columns.dist_type[d], lambda: distinct.parsed(d), bundle, candidates, programs
    )


def _requirement_verdict(
    registry: Registry,
    type_name: str,
    parsed: Callable[[], Any],
    bundle: str,
    candidates: Callable[[tuple[str, Hashable]], Iterator[Any]],
    programs: _Programs | None = None,
) -> tuple[str, str] | None:
    """What a requirement says (see :func:`_check_requirement`); ``programs`` answers for a
    predicate with a ``program`` instead of its ``matches``, from the catalog's columns."""
    pt = registry.property_types[type_name]
    assert pt.requirement is not None
    try:
        predicate = pt.requirement(parsed(), _Context(registry, bundle))
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return (ERROR, f"invalid {type_name} value: {exc}")
    except Exception as exc:  # a plugin's requirement builder failing is its bug, reported not raised
        return (ERROR, f"invalid {type_name} value: {exc!r}")
    lookup: tuple[str, Hashable] | None = getattr(predicate, "lookup", None)
    if lookup is None:
        return None
    program = getattr(predicate, "program", None) if programs is not None else None
    try:
        found = programs.satisfied(program, lookup) if program is not None and programs is not None else None
        if found is not None:
            return None if found else (WARNING, str(predicate))
        for view in candidates(lookup):
            if predicate.matches(view):
                return None
    except Exception:  # matching is the plugin's business; no verdict, no warning
        return None
    return (WARNING, str(predicate))


class _Programs:
    """Predicates' programs (see :class:`olmkit.types.Predicate`) evaluated on a catalog's columns.

    A program matches what its predicate's ``matches`` does (when every property parses:
    values that do not are left out, as :class:`_RowView` leaves them out), without building
    the candidates' properties: a has-type node reads the rows' property types, a lookup
    node the index.
    """

    def __init__(self, catalog: Catalog, lazy: LazyBundles, distinct: _Distinct, views: dict[int, Any]) -> None:
        self.catalog = catalog
        self.lazy = lazy
        self.distinct = distinct
        self.views = views  # row -> its _RowView, made once
        c = lazy.columns
        self.dist_type, self.starts, self.refs = c.dist_type, c.prop_start, c.prop_ref
        self.filed: dict[tuple[str, Hashable], frozenset[int]] = {}

    def view(self, row: int) -> _RowView:
        """The bundle of ``row`` as predicates see it."""
        found: _RowView | None = self.views.get(row)
        if found is None:
            found = self.views[row] = _RowView(self.lazy, self.distinct, row)
        return found

    def satisfied(self, program: Any, lookup: tuple[str, Hashable]) -> bool | None:
        """Whether a bundle under ``lookup`` matches ``program`` (newest first, as :func:`_check_distinct`).

        ``None``: the predicate's ``matches`` answers: a program with a node not evaluated
        here, or a lone identity node (``matches`` reads what it reads).
        """
        if type(program) is not tuple or not program or program[0] == "identity" or not self._known(program):
            return None
        rows = self.catalog.lookup_rows(*lookup)
        if rows is None:
            return None
        run = self._run
        return any(run(program, row) for row in reversed(rows))

    def _known(self, program: Any) -> bool:
        """Whether every node of ``program`` is one :meth:`_run` evaluates."""
        tag = program[0] if type(program) is tuple and program else None
        if tag in ("all", "any", "none"):
            return all(self._known(child) for child in program[1:])
        return (
            (tag == "lookup" and len(program) == 2 and type(program[1]) is tuple and len(program[1]) == 2)
            or (tag == "has_type" and len(program) == 2)
            or (tag == "identity" and len(program) == 4)
        )

    def _run(self, program: tuple[Any, ...], row: int) -> bool:
        tag = program[0]
        if tag == "has_type":
            dist_type, wanted = self.dist_type, program[1]
            return any(dist_type[d] == wanted for d in self.refs[self.starts[row] : self.starts[row + 1]])
        if tag == "lookup":
            key = program[1]
            filed = self.filed.get(key)
            if filed is None:
                filed = self.filed[key] = frozenset(self.catalog.lookup_rows(*key) or ())
            return row in filed
        if tag == "identity":
            _, type_name, package, version_range = program
            return identity_in_range(self.view(row).values(type_name), package, version_range)
        if tag == "all":
            return all(self._run(child, row) for child in program[1:])
        if tag == "any":
            return any(self._run(child, row) for child in program[1:])
        return not any(self._run(child, row) for child in program[1:])  # "none"


class _RowView:
    """A bundle in columns as predicates see it (:class:`_View`'s twin: values parsed once per
    distinct property; ``properties`` builds the package's bundles)."""

    __slots__ = ("_distinct", "_lazy", "_properties", "_row", "_values")

    def __init__(self, lazy: LazyBundles, distinct: _Distinct, row: int) -> None:
        self._lazy = lazy
        self._distinct = distinct
        self._row = row
        self._values: dict[str, tuple[Any, ...]] = {}
        self._properties: tuple[Any, ...] | None = None

    @property
    def name(self) -> str:
        return self._lazy.columns.bundle_name[self._row]

    @property
    def package(self) -> str:
        c = self._lazy.columns
        return c.packages[c.bundle_package[self._row]]

    @property
    def version(self) -> str | None:
        return self._lazy.columns.bundle_version[self._row]

    @property
    def properties(self) -> tuple[Any, ...]:
        found = self._properties
        if found is None:
            found = self._properties = self._lazy.properties(self._row)
        return found

    def values(self, type_name: str) -> tuple[Any, ...]:
        found = self._values.get(type_name)
        if found is None:
            c = self._lazy.columns
            row, dist_type = self._row, c.dist_type
            out = []
            for d in c.prop_ref[c.prop_start[row] : c.prop_start[row + 1]]:
                if dist_type[d] == type_name:
                    try:
                        out.append(self._distinct.kept(d))
                    except ValueError:
                        continue
            found = self._values[type_name] = tuple(out)
        return found


def _unsatisfied_problem(package: str, hits: list[tuple[Bundle, int, str]]) -> Problem:
    """One warning for a requirement nothing satisfies, at its first bundle, naming every bundle carrying it."""
    bundle, i, predicate = hits[0]
    message = f"nothing in this catalog satisfies the requirement: an operator {predicate}"
    if len(hits) > 1:
        names = [b.name for b, _, _ in hits]
        versions = []
        for b, _, _ in hits:
            with contextlib.suppress(ValueError):
                versions.append((parse_version(b.version or "", tolerant=True), b.version))
        span = ""
        if len(versions) == len(hits):
            span = f", versions {min(versions)[1]} to {max(versions)[1]}"
        message += f" (required by {len(hits)} bundles of {package}{span}: {_names(names)})"
    return _bundle_problem(WARNING, message, bundle, f"properties[{i}]")


def validate_path(
    path: str | os.PathLike[str], registry: Registry, *, cache: bool = True
) -> tuple[Catalog, list[Problem], bool]:
    """Load and validate a catalog; an unchanged catalog's report comes from the cache.

    Returns:
        ``(catalog, problems, cached)``.

    Raises:
        InputError: a file is missing, unreadable or malformed.
    """
    result, pending = _load(path, registry, name=None, cache=cache)
    report = _report_path(result.catalog.digest, Path(path)) if cache and result.catalog.digest else None
    if result.cached and report is not None:
        try:
            rows = orjson.loads(report.read_bytes())
            return result.catalog, [Problem(**row) for row in rows], True
        except (OSError, orjson.JSONDecodeError, TypeError):
            pass
    # a large catalog's cache is written by the validation child once it has checked its
    # part: on two cores, a third process writing at the same time would slow both parts.
    # A one-shot command defers it until its report is out (catalog.defer_writes).
    then = pending.write if pending is not None and pending.big and not deferring() else None
    problems, handed = _validate_catalog(result.catalog, registry, result.problems, jobs=None, then=then)
    if pending is not None and not handed:
        pending.start()
    if report is not None:
        write_later(lambda: _write_report(report, problems))  # after the catalog's own cache
    return result.catalog, problems, False


def _write_report(report: Path, problems: list[Problem]) -> None:
    with contextlib.suppress(OSError):
        report.parent.mkdir(parents=True, exist_ok=True)
        tmp = report.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps([p.to_dict() for p in problems]))
        os.replace(tmp, report)


def _report_path(digest: str, root: Path) -> Path:
    """Next to the snapshot's cache file, keyed as it is: the problems name the catalog's files."""
    return _cache_path(digest, root).with_suffix(".validation.json")
