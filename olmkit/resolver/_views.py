"""What plugins' predicates and requirement builders see of bundles during resolution.

* :class:`BundleView` is what predicates see of a bundle (a ``PropertyView``): each
  property type is parsed once per bundle, on first use.
* :class:`ViewFactory` makes views that share parsed property values.
* :class:`CandidateBatch` is what a predicate's ``select`` sees: the candidates under one
  lookup key, with what the predicates read of them kept once.
* :class:`Context` is the ``RequirementContext`` handed to requirement builders.
* :func:`predicate_lookups`: the index keys a predicate narrows its candidates to.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, Final

from olmkit.model import Property
from olmkit.registry import Registry

__all__ = [
    "MISSING",
    "BundleView",
    "CandidateBatch",
    "Context",
    "Failed",
    "ViewFactory",
    "parse_once",
    "predicate_lookups",
    "property_key",
]

_TYPE = attrgetter("type")


class BundleView:
    """A bundle (catalog entry or installed CSV) as predicates see it."""

    __slots__ = ("_key", "_parse", "_parsed", "_registry", "name", "package", "properties", "version")

    def __init__(
        self,
        name: str,
        package: str,
        version: str | None,
        properties: tuple[Property, ...],
        registry: Registry,
        parse: Callable[[Any, Property], Any] | None = None,
        inline: frozenset[str] | None = None,
    ) -> None:
        self.name = name
        self.package = package
        self.version = version
        if inline is None:
            inline = registry.inline_types  # computed per call: callers making many views pass it
        if inline and not inline.isdisjoint(map(_TYPE, properties)):
            properties = tuple(p for p in properties if p.type not in inline)
        self.properties = properties
        self._registry = registry
        self._parse = parse
        self._parsed: dict[str, tuple[Any, ...]] = {}
        self._key: bytes | None = None

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (parsed once).

        Raises:
            ValueError: a property of that type is malformed.
        """
        parsed = self._parsed.get(type_name)
        if parsed is None:
            pt = self._registry.property_types.get(type_name)
            if pt is None:
                parsed = tuple(p.value for p in self.properties if p.type == type_name)
            elif self._parse is not None:
                parse = self._parse
                parsed = tuple(parse(pt, p) for p in self.properties if p.type == type_name)
            else:
                parsed = tuple(pt.parse(p.value) for p in self.properties if p.type == type_name)
            self._parsed[type_name] = parsed
        return parsed

    @property
    def property_key(self) -> bytes:
        """A canonical key of the property list (for caches keyed by property set)."""
        if self._key is None:
            self._key = property_key(self.properties)
        return self._key


def property_key(properties: Iterable[Property]) -> bytes:
    """A canonical key of a property list (:attr:`BundleView.property_key`, and its like of other views)."""
    import orjson

    key = orjson.dumps([[p.type, p.value] for p in properties], option=orjson.OPT_SORT_KEYS, default=str)
    return bytes(memoryview(key))  # orjson's result keeps a 4 KiB buffer: copy it


class ViewFactory:
    """Bundle views that share parsed property values (parsing is deterministic)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._parsed: dict[int, Any] = {}
        self._keep: list[Property] = []

    def view(self, name: str, package: str, version: str | None, properties: tuple[Property, ...]) -> BundleView:
        return BundleView(name, package, version, properties, self.registry, self._parse)

    def _parse(self, pt: Any, prop: Property) -> Any:
        if id(prop) not in self._parsed:
            self._keep.append(prop)  # ids stay valid while the factory lives
        return parse_once(self._parsed, pt, prop)


MISSING: Final = object()


class Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def parse_once(parsed: dict[int, Any], pt: Any, prop: Property) -> Any:
    """``pt.parse(prop.value)``, kept in ``parsed`` by the property's id (a failure is kept and raised again).

    The properties must stay alive as long as ``parsed`` is used (their ids are its keys).
    """
    found = parsed.get(id(prop), MISSING)
    if found is MISSING:
        try:
            found = pt.parse(prop.value)
        except ValueError as exc:
            found = Failed(exc)
        parsed[id(prop)] = found
    if type(found) is Failed:
        raise found.exc
    return found


class CandidateBatch:
    """The candidates under one lookup, as predicates' ``select`` sees them (a ``CandidateBatch``)."""

    __slots__ = ("_read", "candidates")

    def __init__(self, candidates: Sequence[BundleView]) -> None:
        self.candidates = candidates
        self._read: dict[Any, Any] = {}

    def shared(self, read: Any) -> Any:
        """``read(candidates)``, once per batch (a failure is raised again to every caller)."""
        found = self._read.get(read, MISSING)
        if found is MISSING:
            try:
                found = read(self.candidates)
            except ValueError as exc:
                found = Failed(exc)
            self._read[read] = found
        if type(found) is Failed:
            raise found.exc
        return found


class Context:
    """The ``RequirementContext`` handed to requirement builders.

    It notes whether the builder read :attr:`bundle`: a predicate built without looking
    at the bundle's name is the same for every bundle carrying the same property, and is
    built once.
    """

    def __init__(self, registry: Registry, bundle: str) -> None:
        self.registry = registry
        self._bundle = bundle
        self.used_bundle = False

    @property
    def bundle(self) -> str:
        self.used_bundle = True
        return self._bundle

    @bundle.setter
    def bundle(self, value: str) -> None:
        self._bundle = value

    def build_constraint(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"a constraint must be an object, not {type(value).__name__}")
        keys = [k for k in value if k != "failureMessage"]
        if not keys:
            raise ValueError("constraint is empty")
        evaluators = self.registry.constraint_evaluators
        for k in keys:
            if k not in evaluators:
                raise ValueError(f'json: unknown field "{k}"')
        if len(keys) > 1:
            raise ValueError(f"constraint has more than one key: {', '.join(keys)}")
        return evaluators[keys[0]].build(value[keys[0]], self)


def predicate_lookups(predicate: Any) -> Sequence[tuple[str, Hashable]] | None:
    """The index keys a predicate narrows its candidates to, or ``None`` (scan everything)."""
    lookups: Sequence[tuple[str, Hashable]] | None = getattr(predicate, "lookups", None)
    if lookups is None:
        single = getattr(predicate, "lookup", None)
        lookups = [single] if single is not None else None
    return lookups
