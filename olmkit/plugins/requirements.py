"""Built-in plugin: what a bundle requires of others, and the keys of ``olm.constraint``.

Property types (each contributes a *requirement*: a predicate that at least one
installed bundle must match):

* ``olm.gvk.required`` ``{group, version, kind}``: a provider of that exact API;
* ``olm.package.required`` ``{packageName, versionRange}``: a bundle of that package
  whose version is in the blang/semver range (an unparsable range is an error);
* ``olm.label.required`` ``{label}``: a bundle carrying that ``olm.label``;
* ``olm.constraint``: a generic constraint, parsed strictly (unknown fields are errors,
  at most 131072 raw bytes), with exactly one evaluator key.

Constraint keys (``olmkit_constraint_evaluators``): ``gvk``, ``package``, ``cel``, ``all``,
``any``, ``not``; they nest. A plugin's own key works exactly like these.

CEL rules run on cel-python with the variable ``properties`` (the candidate's property
list as ``{type, value}`` maps) and the function ``semver_compare(a, b)``. A rule is
compiled once per process; each distinct rule is evaluated at most once per distinct
property set. A rule is checked as upstream (cel-go) compiles it: one that does not
parse, names something undeclared, or whose type is not bool is a hard error naming the
bundle (``convert olm.constraint to resolver predicate: ...``); an evaluation error means
"no match".

This module also answers ``olmkit_csv_properties``: the properties of an installed
ClusterServiceVersion that carries no properties annotation (owned APIs become
``olm.gvk``, required ones ``olm.gvk.required``).

.. versionadded:: 0.1
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import attrs
import orjson

from olmkit import hookimpl
from olmkit.catalog.semver import Range, Version, identity_in_range, parse_range, parse_version
from olmkit.types import (
    CandidateBatch,
    ConstraintEvaluator,
    EachForm,
    FieldsForm,
    KeyedForm,
    PackageIdentity,
    PatternForm,
    PropertyType,
    PropertyView,
    RangeForm,
    RequirementContext,
)

__all__ = [
    "MAX_CONSTRAINT_SIZE",
    "AllOf",
    "AnyOf",
    "CelRule",
    "GvkProvided",
    "LabelCarried",
    "NoneOf",
    "PackageInRange",
    "csv_properties",
]

GVK: Final = "olm.gvk"
PACKAGE: Final = "olm.package"
LABEL: Final = "olm.label"
CONSTRAINT: Final = "olm.constraint"

#: Upstream's limit on the raw size of one olm.constraint value (``2 << 16``).
MAX_CONSTRAINT_SIZE: Final = 131072


# --------------------------------------------------------------------------- predicates


def _gvk_key(value: Any) -> tuple[str, str, str] | None:
    if isinstance(value, Mapping):
        g, v, k = value.get("group"), value.get("version"), value.get("kind")
    else:
        g, v, k = getattr(value, "group", None), getattr(value, "version", None), getattr(value, "kind", None)
    if not isinstance(g, str) or not isinstance(v, str) or not isinstance(k, str):
        return None
    return (g, v, k)


@attrs.frozen
class GvkProvided:
    """Matches bundles providing the API ``group/version/kind`` (an ``olm.gvk`` property)."""

    group: str
    version: str
    kind: str

    #: the bundles filed under the lookup key are exactly those that match
    exact: ClassVar[bool] = True

    @property
    def lookup(self) -> tuple[str, Hashable]:
        return (GVK, (self.group, self.version, self.kind))

    @property
    def program(self) -> tuple[Any, ...]:
        """What the graph compiler evaluates instead of asking: the bundles filed under the lookup (exact)."""
        return ("lookup", self.lookup)

    def matches(self, candidate: PropertyView) -> bool:
        key = (self.group, self.version, self.kind)
        return any(_gvk_key(v) == key for v in candidate.values(GVK))

    def __str__(self) -> str:
        return f"providing an API with group: {self.group}, version: {self.version}, kind: {self.kind}"


@attrs.frozen
class PackageInRange:
    """Matches bundles of ``package`` whose version lies in ``version_range``."""

    package: str
    version_range: str
    range: Range = attrs.field(eq=False, repr=False)

    @property
    def lookup(self) -> tuple[str, Hashable]:
        return (PACKAGE, self.package)

    @property
    def program(self) -> tuple[Any, ...]:
        """What the graph compiler evaluates instead of asking: an identity of the package, its version in range."""
        return ("identity", PACKAGE, self.package, self.range)

    def matches(self, candidate: PropertyView) -> bool:
        return identity_in_range(candidate.values(PACKAGE), self.package, self.range)

    def select(self, batch: CandidateBatch) -> list[bool]:
        """Whether each candidate matches, from its versions read once per batch (:func:`_versions`)."""
        versions: _Versions = batch.shared(_versions)
        single = versions.single.get(self.package)
        if single is not None:
            return self.range.matches_each(single)  # one version each: the usual catalog
        row = versions.rows.get(self.package)
        if row is None:
            return [False] * versions.count
        return [any(self.range.matches(v) for v in found) for found in row]

    def __str__(self) -> str:
        return f"with package: {self.package} and with version in range: {self.version_range}"


@attrs.frozen
class _Versions:
    """What :func:`_versions` read: per package, each candidate's parsed versions."""

    count: int
    #: package -> each candidate's only version, when every candidate has exactly one
    single: dict[str, list[Version]]
    #: package -> each candidate's versions, for the other packages
    rows: dict[str, list[list[Version]]]


def _versions(candidates: Sequence[PropertyView]) -> _Versions:
    """The candidates' versions by package, as :meth:`PackageInRange.matches` reads them.

    Read once per batch of candidates (a catalog's bundles of one package) for every
    range asked about them, instead of once per range and candidate.

    Raises:
        ValueError: a candidate's ``olm.package`` does not parse (``matches`` raises too).
    """
    rows: dict[str, list[list[Version]]] = {}
    n = len(candidates)
    for i, candidate in enumerate(candidates):
        for identity in candidate.values(PACKAGE):
            if not isinstance(identity, PackageIdentity) or identity.version is None:
                continue
            try:
                version = parse_version(identity.version, tolerant=True)
            except ValueError:
                continue
            row = rows.get(identity.package)
            if row is None:
                row = rows[identity.package] = [[] for _ in range(n)]
            row[i].append(version)
    single = {}
    for package, row in list(rows.items()):
        if all(len(found) == 1 for found in row):
            single[package] = [found[0] for found in row]
            del rows[package]
    return _Versions(n, single, rows)


def _label_of(value: Any) -> Any:
    if isinstance(value, Mapping):
        return value.get("label")
    return getattr(value, "label", value)


@attrs.frozen
class LabelCarried:
    """Matches bundles carrying the ``olm.label`` ``label``."""

    label: str

    #: the bundles filed under the lookup key are exactly those that match
    exact: ClassVar[bool] = True

    @property
    def lookup(self) -> tuple[str, Hashable]:
        return (LABEL, self.label)

    @property
    def program(self) -> tuple[Any, ...]:
        """What the graph compiler evaluates instead of asking: the bundles filed under the lookup (exact)."""
        return ("lookup", self.lookup)

    def matches(self, candidate: PropertyView) -> bool:
        return any(_label_of(v) == self.label for v in candidate.values(LABEL))

    def __str__(self) -> str:
        return f"with label: {self.label}"


@attrs.frozen
class AllOf:
    """Matches bundles matched by every child; narrows through any child's lookup."""

    children: tuple[Any, ...]

    @property
    def lookup(self) -> tuple[str, Hashable] | None:
        for child in self.children:
            if getattr(child, "lookup", None) is not None:
                return child.lookup  # type: ignore[no-any-return]
        return None

    @property
    def program(self) -> tuple[Any, ...] | None:
        """Every child's program (``None`` when one has none)."""
        return _combined("all", self.children)

    def matches(self, candidate: PropertyView) -> bool:
        return all(child.matches(candidate) for child in self.children)

    def select(self, batch: CandidateBatch) -> list[bool]:
        """Whether each candidate matches every child: child by child, over the candidates still in.

        Each child is asked about exactly the candidates :meth:`matches` would ask it about
        (those every earlier child matched), or answers through its own ``select`` (with
        the same batch: what it reads is shared with the other predicates of the batch).

        Raises:
            ValueError: a child's ``matches`` raised (the resolver then asks :meth:`matches`,
                which says about which candidate). A child's ``select`` that raises is not
                an answer: that child is asked candidate by candidate.
        """
        candidates = batch.candidates
        result = [True] * len(candidates)
        for child in self.children:
            child_select = getattr(child, "select", None)
            selected = None
            if child_select is not None:
                try:
                    selected = child_select(batch)
                except ValueError:
                    selected = None  # asked candidate by candidate: matches says whether one fails
                if selected is not None and len(selected) != len(candidates):
                    selected = None
            if selected is not None:
                result = [r and bool(s) for r, s in zip(result, selected, strict=True)]
            else:
                match = child.matches
                result = [r and match(c) for r, c in zip(result, candidates, strict=True)]
        return result

    def __str__(self) -> str:
        return " and ".join(str(c) for c in self.children)


@attrs.frozen
class AnyOf:
    """Matches bundles matched by at least one child.

    ``lookups`` lists every child's lookup when all children have one: the resolver then
    looks the candidates up under each instead of scanning.
    """

    children: tuple[Any, ...]
    lookup: tuple[str, Hashable] | None = None

    @property
    def lookups(self) -> tuple[tuple[str, Hashable], ...] | None:
        keys = []
        for child in self.children:
            many = getattr(child, "lookups", None)
            if many is not None:
                keys.extend(many)
            elif getattr(child, "lookup", None) is not None:
                keys.append(child.lookup)
            else:
                return None
        return tuple(keys)

    @property
    def exact(self) -> bool:
        """Exact when every child is: the bundles filed under the lookups are those that match."""
        return all(getattr(child, "exact", False) is True for child in self.children)

    @property
    def program(self) -> tuple[Any, ...] | None:
        """Any child's program (``None`` when one has none)."""
        return _combined("any", self.children)

    def matches(self, candidate: PropertyView) -> bool:
        return any(child.matches(candidate) for child in self.children)

    def __str__(self) -> str:
        return " or ".join(str(c) for c in self.children)


@attrs.frozen
class NoneOf:
    """Matches bundles matched by none of the children (upstream's ``not``)."""

    children: tuple[Any, ...]
    lookup: tuple[str, Hashable] | None = None

    @property
    def program(self) -> tuple[Any, ...] | None:
        """No child's program (``None`` when one has none)."""
        return _combined("none", self.children)

    def matches(self, candidate: PropertyView) -> bool:
        return not any(child.matches(candidate) for child in self.children)

    def __str__(self) -> str:
        return " and not ".join(str(c) for c in self.children)


def _combined(tag: str, children: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``(tag, *programs)`` of the children, or ``None`` when a child has no program."""
    programs = []
    for child in children:
        program = getattr(child, "program", None)
        if program is None:
            return None
        programs.append(program)
    return (tag, *programs)


# --------------------------------------------------------------------------- CEL


def _semver_compare(left: Any, right: Any) -> Any:
    import celpy

    try:
        a = parse_version(str(left), tolerant=True)
        b = parse_version(str(right), tolerant=True)
    except ValueError as exc:
        return celpy.evaluation.CELEvalError(f"semver_compare: {exc}")
    return celpy.celtypes.IntType(a.compare(b))


_PROGRAMS: dict[str, Any] = {}
_CEL_RESULTS: dict[tuple[str, bytes], bool] = {}
_CEL_STATS = {"compiled": 0, "evaluated": 0}


def _prepare_cel_parser() -> None:
    """Give cel-python its parser from lark's grammar cache, kept next to the catalog cache.

    cel-python builds one LALR parser per process on its first compile (0.3-0.7 s, more
    than most resolutions); lark can store the analysed grammar and load it in about
    20 ms. cel-python documents its parser as a class-level singleton (``CEL_PARSER``), so
    setting it first is enough. Lark checks a digest of the grammar, the options and its
    own version before using the file, and rebuilds (and rewrites) it when the file is
    damaged or half-written by a concurrent process: its report of that is silenced, as
    the result is the same parser. Anything unexpected leaves cel-python to build the
    parser itself, as before.
    """
    try:
        import celpy
        import lark
        from celpy import celparser

        if celparser.CELParser.CEL_PARSER is not None:
            return
        import logging  # imported here, as lark imports it: not by every command

        from olmkit.catalog import cache_dir

        grammar = (Path(celparser.__file__).parent / "cel.lark").read_text()
        tag = f"{grammar}\0{lark.__version__}\0{sys.version_info[:2]}".encode()
        directory = cache_dir() / "cel"
        directory.mkdir(parents=True, exist_ok=True)
        stored = directory / f"parser-{hashlib.sha256(tag).hexdigest()[:20]}.lark"
        quiet = logging.getLogger("lark")
        was_disabled, quiet.disabled = quiet.disabled, True
        try:
            celparser.CELParser.CEL_PARSER = lark.Lark(
                grammar,
                parser="lalr",
                start="expr",
                debug=True,
                g_regex_flags=re.M,
                lexer_callbacks={"IDENT": celparser.CELParser.ambiguous_literals},
                propagate_positions=True,
                maybe_placeholders=False,
                priority="invert",
                tree_class=celpy.InterpretedRunner.tree_node_class,
                cache=str(stored),  # part of lark's digest: always the same path
            )
        finally:
            quiet.disabled = was_disabled
    except Exception:  # an optimisation only: cel-python builds its own parser
        return


def _compile(rule: str) -> Any:
    program = _PROGRAMS.get(rule)
    if program is None:
        import celpy

        from olmkit.plugins._cel_check import BOOL, rule_type

        _prepare_cel_parser()
        env = celpy.Environment()
        try:
            ast = env.compile(rule)
        except Exception as exc:  # celpy raises several parser error types
            raise ValueError(_syntax_error(rule, exc)) from None
        try:
            result = rule_type(ast)
        except RecursionError:
            raise ValueError("ERROR: <input>: expression recursion limit exceeded") from None
        if result != BOOL:  # upstream's compile step checks the type, cel-python does not
            raise ValueError("cel expressions must have type Bool")
        program = env.program(ast, functions={"semver_compare": _semver_compare})
        _PROGRAMS[rule] = program
        _CEL_STATS["compiled"] += 1
    return program


def _syntax_error(rule: str, exc: Exception) -> str:
    """A parse failure as cel-go words it: ``ERROR: <input>:1:32: Syntax error: mismatched input ')'``."""
    line, column = getattr(exc, "line", None) or 1, getattr(exc, "column", None) or 1
    cause = exc.__cause__ or exc.__context__
    token = getattr(cause, "token", None)
    char = getattr(cause, "char", None)
    if token is not None and getattr(token, "type", None) == "$END":
        lines = rule.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        what = "mismatched input '<EOF>'"
    elif token is not None:
        what = f"mismatched input '{token}'"
    elif char is not None:
        what = f"token recognition error at: '{char}'"
    else:
        what = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"ERROR: <input>:{line}:{column}: Syntax error: {what}"


def property_set_key(properties: Sequence[Any]) -> bytes:
    """A canonical key of a property list: equal lists give equal keys."""
    return orjson.dumps(
        [[getattr(p, "type", None), getattr(p, "value", None)] for p in properties],
        option=orjson.OPT_SORT_KEYS,
        default=str,
    )


# ``properties.exists(p, p.type == "T")`` - the most common rule by far - is "carries a
# property of type T"; it is answered without the interpreter (same result, ~1000x faster).
_HAS_TYPE: Final = re.compile(r'\s*properties\.exists\(\s*(\w+)\s*,\s*\1\.type\s*==\s*"([^"\\]*)"\s*\)\s*')


_CEL_IDENT: Final = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED: Final = frozenset(
    {
        *("as", "break", "const", "continue", "else", "false", "for", "function", "if", "import", "in"),
        *("let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while"),
    }
)


#: the has-type rules :func:`_certainly_valid` accepts, as one pattern (the CEL key's form):
#: an identifier that is not a reserved word, a one-line string without escapes
HAS_TYPE_PATTERN: Final = (
    r"\s*properties\.exists\(\s*(?!(?:" + "|".join(sorted(_CEL_RESERVED)) + r")(?![_a-zA-Z0-9]))"
    r'([_a-zA-Z][_a-zA-Z0-9]*)\s*,\s*\1\.type\s*==\s*"([^"\\\r\n]*)"\s*\)\s*'
)


def _certainly_valid(fast: re.Match[str]) -> bool:
    """Whether a ``_HAS_TYPE`` match is valid CEL: an identifier variable and a plain one-line string."""
    var, text = fast.group(1), fast.group(2)
    return bool(_CEL_IDENT.fullmatch(var)) and var not in _CEL_RESERVED and "\n" not in text and "\r" not in text


def _property_types(candidates: Sequence[PropertyView]) -> list[tuple[Any, ...]]:
    """The types of each candidate's properties (what a has-type rule asks), read once per batch."""
    return [tuple([getattr(p, "type", None) for p in c.properties]) for c in candidates]


@attrs.frozen
class CelRule:
    """Matches bundles whose properties satisfy a CEL ``rule``."""

    rule: str
    failure_message: str = ""
    lookup: tuple[str, Hashable] | None = None
    has_type: str | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        fast = _HAS_TYPE.fullmatch(self.rule)
        if fast is None or not _certainly_valid(fast):
            _compile(self.rule)
        # else the rule is valid CEL by construction: compiling it (and building
        # cel-python's parser, about a second) waits until something evaluates it
        if fast is not None:
            object.__setattr__(self, "has_type", fast.group(2))

    @property
    def program(self) -> tuple[Any, ...] | None:
        """A has-type rule's program: a property of that type (``None``: other rules are evaluated)."""
        return ("has_type", self.has_type) if self.has_type is not None else None

    def matches(self, candidate: PropertyView) -> bool:
        if self.has_type is not None:
            return any(getattr(p, "type", None) == self.has_type for p in candidate.properties)
        key = getattr(candidate, "property_key", None)
        if key is None:
            key = property_set_key(candidate.properties)
        cached = _CEL_RESULTS.get((self.rule, key))
        if cached is not None:
            return cached
        result = self._evaluate(candidate.properties)
        _CEL_RESULTS[(self.rule, key)] = result
        return result

    def select(self, batch: CandidateBatch) -> list[bool]:
        """A has-type rule's answer for each candidate, from their property types read once per batch.

        Raises:
            ValueError: for any other rule (evaluated candidate by candidate, where asked).
        """
        if self.has_type is None:
            raise ValueError("only a has-type rule answers for a batch")
        has_type = self.has_type
        return [has_type in types for types in batch.shared(_property_types)]

    def _evaluate(self, properties: Sequence[Any]) -> bool:
        import celpy

        _CEL_STATS["evaluated"] += 1
        data: list[dict[str, Any]] = []
        for p in properties:
            value = getattr(p, "value", None)
            try:
                orjson.dumps(value)
            except TypeError:
                data.append({})
                continue
            data.append({"type": getattr(p, "type", ""), "value": value})
        try:
            result = _compile(self.rule).evaluate({"properties": celpy.adapter.json_to_cel(data)})
        except Exception:  # an evaluation error means "no match", as upstream
            return False
        return isinstance(result, (bool, celpy.celtypes.BoolType)) and bool(result)

    def __str__(self) -> str:
        return f'with constraint: "{self.rule}" and message: "{self.failure_message}"'


# --------------------------------------------------------------------------- builders


def _mapping(value: Any, what: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):  # the exact check first: ABCs are slow
        raise ValueError(f"{what} must be an object, not {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise ValueError(f'json: unknown field "{key}"')
    return value


def _string(value: Mapping[str, Any], key: str, what: str, *, empty: bool = False) -> str:
    item = value.get(key, "" if empty else None)
    if not isinstance(item, str) or (not item and not empty):
        raise ValueError(f"{what}: {key} must be a non-empty string")
    return item


def build_gvk(value: Any, context: RequirementContext | None = None) -> GvkProvided:
    """``{group, version, kind}`` -> :class:`GvkProvided`."""
    raw = _mapping(value, "gvk", ("group", "version", "kind"))
    return GvkProvided(
        _string(raw, "group", "gvk", empty=True), _string(raw, "version", "gvk"), _string(raw, "kind", "gvk")
    )


def build_package(value: Any, context: RequirementContext | None = None) -> PackageInRange:
    """``{packageName, versionRange}`` -> :class:`PackageInRange` (a bad range is an error)."""
    raw = _mapping(value, "package", ("packageName", "versionRange"))
    name = _string(raw, "packageName", "package")
    text = _string(raw, "versionRange", "package")
    try:
        parsed = parse_range(text)
    except ValueError as exc:
        raise ValueError(f"package {name}: invalid version range {text!r}: {exc}") from None
    return PackageInRange(name, text, parsed)


def build_label(value: Any, context: RequirementContext | None = None) -> LabelCarried:
    """``{label}`` -> :class:`LabelCarried`."""
    return LabelCarried(_string(_mapping(value, "label", ("label",)), "label", "label"))


def build_cel(value: Any, context: RequirementContext | None = None, failure_message: str = "") -> CelRule:
    """``{rule}`` -> :class:`CelRule`, compiled now (a compile error is a ValueError)."""
    raw = _mapping(value, "cel", ("rule",))
    return CelRule(_string(raw, "rule", "cel"), failure_message)


def _children(value: Any, key: str, context: RequirementContext) -> tuple[Any, ...]:
    raw = _mapping(value, key, ("constraints",))
    items = raw.get("constraints")
    if not isinstance(items, list) or not items:
        raise ValueError(f"{key}: constraints must be a non-empty list")
    return tuple(context.build_constraint(item) for item in items)


def build_all(value: Any, context: RequirementContext) -> AllOf:
    """``{constraints: [...]}`` -> :class:`AllOf`."""
    return AllOf(_children(value, "all", context))


def build_any(value: Any, context: RequirementContext) -> AnyOf:
    """``{constraints: [...]}`` -> :class:`AnyOf`."""
    return AnyOf(_children(value, "any", context))


def build_not(value: Any, context: RequirementContext) -> NoneOf:
    """``{constraints: [...]}`` -> :class:`NoneOf`."""
    return NoneOf(_children(value, "not", context))


def _check_size(value: Any) -> None:
    size = len(orjson.dumps(value, default=str))
    if size > MAX_CONSTRAINT_SIZE:
        raise ValueError(f"olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_SIZE} bytes")


def parse_constraint(value: Any) -> Mapping[str, Any]:
    """Check an ``olm.constraint`` value's shape and size; keys are checked when built.

    Raises:
        ValueError: with upstream's text, ``parse olm.constraint: ...``.
    """
    try:
        _check_size(value)
        if not isinstance(value, Mapping):
            raise ValueError(f"olm.constraint must be an object, not {type(value).__name__}")
        message = value.get("failureMessage", "")
        if not isinstance(message, str):
            raise ValueError("olm.constraint: failureMessage must be a string")
    except ValueError as exc:
        raise ValueError(f"{PARSE_ERROR}{exc}") from None
    return value


#: the prefixes of upstream's two kinds of olm.constraint errors
PARSE_ERROR: Final = "parse olm.constraint: "
CONVERT_ERROR: Final = "convert olm.constraint to resolver predicate: "


def constraint_requirement(value: Mapping[str, Any], context: RequirementContext) -> Any:
    """Build the predicate of an ``olm.constraint`` (through the registered keys).

    Raises:
        ValueError: with upstream's texts: ``parse olm.constraint: json: unknown field "x"``
            for a field no evaluator knows (upstream's strict JSON decoding), else
            ``convert olm.constraint to resolver predicate: ...`` (an empty constraint, a bad
            range, a CEL rule that does not compile or is not of type bool).
    """
    try:
        message = value.get("failureMessage", "")
        rule = value.get("cel")
        if rule is not None and set(value) <= {"cel", "failureMessage"}:
            # failureMessage is shown only for CEL, as upstream
            return build_cel(rule, context, failure_message=message)
        return context.build_constraint({k: v for k, v in value.items() if k != "failureMessage"})
    except ValueError as exc:
        text = str(exc)
        if text.startswith((PARSE_ERROR, CONVERT_ERROR)):
            raise
        raise ValueError(f"{PARSE_ERROR if text.startswith('json: ') else CONVERT_ERROR}{text}") from None


# --------------------------------------------------------------------------- registration


# What the builders build, as data (see olmkit.types.FieldsForm): the graph compiler reads
# plain values through these instead of calling the builders. The tags name the predicate
# classes: equal tags and readings, equal predicates.
GVK_FORM: Final = FieldsForm(tag="gvk", fields=("group", "version", "kind"), lookup_type=GVK, may_be_empty=("group",))
PACKAGE_FORM: Final = RangeForm(
    tag="package", name_field="packageName", range_field="versionRange", identity_type=PACKAGE
)
LABEL_FORM: Final = FieldsForm(tag="label", fields=("label",), lookup_type=LABEL)
CEL_FORM: Final = PatternForm(tag="cel", field="rule", pattern=HAS_TYPE_PATTERN, group=2)
CONSTRAINT_FORM: Final = KeyedForm(ignore=("failureMessage",), message="failureMessage", max_bytes=MAX_CONSTRAINT_SIZE)


@hookimpl
def olmkit_property_types() -> Iterator[PropertyType]:
    yield PropertyType(
        name="olm.gvk.required",
        parse=lambda v: build_gvk(v),
        requirement=lambda pred, ctx: pred,
        description="requires a provider of an API (group, version, kind)",
        form=GVK_FORM,
    )
    yield PropertyType(
        name="olm.package.required",
        parse=lambda v: build_package(v),
        requirement=lambda pred, ctx: pred,
        description="requires a bundle of a package in a version range",
        form=PACKAGE_FORM,
    )
    yield PropertyType(
        name="olm.label.required",
        parse=lambda v: build_label(v),
        requirement=lambda pred, ctx: pred,
        description="requires a bundle carrying an olm.label",
        form=LABEL_FORM,
    )
    yield PropertyType(
        name=CONSTRAINT,
        parse=parse_constraint,
        requirement=constraint_requirement,
        description="a generic constraint: gvk, package, cel, all, any, not (or a plugin's key)",
        form=CONSTRAINT_FORM,
    )


@hookimpl
def olmkit_constraint_evaluators() -> Iterator[ConstraintEvaluator]:
    yield ConstraintEvaluator(key="gvk", build=build_gvk, description="a provider of an API", form=GVK_FORM)
    yield ConstraintEvaluator(
        key="package", build=build_package, description="a package in a version range", form=PACKAGE_FORM
    )
    yield ConstraintEvaluator(
        key="cel", build=build_cel, description="a CEL rule over the candidate's properties", form=CEL_FORM
    )
    yield ConstraintEvaluator(
        key="all", build=build_all, description="every nested constraint", form=EachForm("all", "constraints", "all")
    )
    yield ConstraintEvaluator(
        key="any",
        build=build_any,
        description="at least one nested constraint",
        form=EachForm("any", "constraints", "any"),
    )
    yield ConstraintEvaluator(
        key="not",
        build=build_not,
        description="none of the nested constraints",
        form=EachForm("not", "constraints", "none"),
    )


# --------------------------------------------------------------------------- installed CSVs


def _crd_gvks(items: Any) -> Iterator[dict[str, str]]:
    if not isinstance(items, list):
        return
    for item in items:
        if not isinstance(item, Mapping):
            continue
        name, version, kind = item.get("name"), item.get("version"), item.get("kind")
        group = item.get("group")
        if group is None and isinstance(name, str) and "." in name:
            group = name.split(".", 1)[1]
        if isinstance(group, str) and isinstance(version, str) and isinstance(kind, str):
            yield {"group": group, "version": version, "kind": kind}


def csv_properties(csv: Mapping[str, Any], package: str | None) -> list[dict[str, Any]]:
    """Properties of an installed CSV without a properties annotation, as upstream derives them.

    Owned CRDs and API services become ``olm.gvk``, required ones ``olm.gvk.required``; an
    ``olm.package`` is added when ``package`` (inferred from subscriptions) is known.
    """
    spec = csv.get("spec") or {}
    props: list[dict[str, Any]] = []
    for section in ("customresourcedefinitions", "apiservicedefinitions"):
        defs = spec.get(section) or {}
        if not isinstance(defs, Mapping):
            continue
        props += [{"type": GVK, "value": g} for g in _crd_gvks(defs.get("owned"))]
        props += [{"type": "olm.gvk.required", "value": g} for g in _crd_gvks(defs.get("required"))]
    if package:
        version = spec.get("version")
        props.append({"type": PACKAGE, "value": {"packageName": package, "version": str(version or "")}})
    return props


@hookimpl
def olmkit_csv_properties(csv: Mapping[str, Any], package: str | None) -> list[dict[str, Any]]:
    return csv_properties(csv, package)
