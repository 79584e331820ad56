"""Registration records: what plugins yield from the registration hooks.

Each record is a frozen value naming one thing the kernel looks up by name. The plugin
manager collects them once into a :class:`olmkit.registry.Registry`; hot paths read the
registry's plain mappings and never call pluggy per catalog entry.

The kernel gives these records no OLM meaning: the built-in plugins in
:mod:`olmkit.plugins` register OLM's property types, constraint keys, install
strategies and catalog source types exactly as a third-party plugin registers its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from olmkit.model import ChannelEntry

__all__ = [
    "AdmissionCheck",
    "BundleContents",
    "BundleFormat",
    "CandidateBatch",
    "CatalogSourceType",
    "CatalogTemplate",
    "ConstraintEvaluator",
    "EachForm",
    "FieldsForm",
    "InstallStrategy",
    "KeyedForm",
    "PackageIdentity",
    "PatternForm",
    "Predicate",
    "PropertyType",
    "PropertyView",
    "RangeForm",
    "RequirementContext",
    "SolverBackend",
    "TemplateContext",
    "Uniqueness",
    "ValueFields",
]


def _identity(value: Any) -> Any:
    return value


def _name(value: str) -> str:
    """Normalize a registered name: names are compared stripped and case-sensitively."""
    name = str(value).strip()
    if not name:
        raise ValueError("a registered name must not be empty")
    return name


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen
class PackageIdentity:
    """The package and version a bundle declares (what an identity property parses to)."""

    package: str
    version: str | None


@attrs.frozen
class Uniqueness:
    """A namespace-wide "at most one" rule a property imposes.

    All bundles whose property yields the same ``key`` compete: at most one of them may
    be installed in a namespace.

    Args:
        key: identity of the shared thing, also its display form (``Kind (group/version)``).
        mandatory_text: message of the rule, ``{key}`` is substituted.
        members_text: message listing the competitors, ``{ids}`` and ``{key}`` substituted.
    """

    key: str
    mandatory_text: str
    members_text: str


@runtime_checkable
class PropertyView(Protocol):
    """What a predicate sees of a candidate bundle (catalog entry or installed operator)."""

    @property
    def package(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    @property
    def properties(self) -> tuple[Any, ...]:
        """The raw :class:`olmkit.model.Property` tuple."""
        ...

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (empty when none)."""
        ...


@runtime_checkable
class Predicate(Protocol):
    """A test over candidate bundles, built from a requirement.

    ``str(predicate)`` is the text shown in explanations (upstream's predicate texts,
    such as ``providing an API with group: G, version: V, kind: K``).

    ``lookup`` narrows the search: when not ``None`` it is ``(property_type, key)`` and
    every bundle the predicate matches is filed under that key by the property type's
    ``index_keys``; ``None`` means "scan every candidate". A predicate may instead have
    ``lookups``, several such keys (it matches only bundles filed under one of them).

    Optionally, ``exact = True`` says the converse holds too: every bundle filed under the
    lookup key(s) matches. The resolver then takes the index's answer for a catalog and
    calls ``matches`` only for a candidate with a property that does not parse.

    Optionally, a predicate with one lookup key may answer for many candidates at once:
    ``select(batch)`` gives, in order, what ``matches`` would for each of
    ``batch.candidates`` (a :class:`CandidateBatch`: the bundles filed under its lookup,
    which many predicates test, such as a package's bundles for every version range asked
    of that package). It may raise :class:`ValueError`, and must when ``matches`` would for
    some candidate: the resolver then asks ``matches`` candidate by candidate, which says
    which one fails.

    Optionally, ``program`` describes what ``matches`` tests as a tuple tree the resolver
    evaluates itself (in C, when compiling a catalog's graph) instead of asking the
    predicate about each candidate, or is ``None``: ``("lookup", (type, key))`` (filed under
    that index key), ``("identity", type, package, range)`` (a property of ``type`` that
    parses to a :class:`PackageIdentity` of ``package`` whose version, read as blang's
    ``ParseTolerant`` does, is in the :class:`olmkit.catalog.semver.Range`),
    ``("has_type", type)`` (a property of that type), and ``("all" | "any" | "none",
    *programs)``. It must match exactly the bundles ``matches`` does when every property
    parses.

    .. versionadded:: 0.2 ``exact`` and ``select``
    .. versionadded:: 0.3 ``program``
    """

    @property
    def lookup(self) -> tuple[str, Hashable] | None: ...

    def matches(self, candidate: PropertyView) -> bool: ...


@runtime_checkable
class CandidateBatch(Protocol):
    """Candidates that several predicates test (what :meth:`Predicate.select <Predicate>` is given).

    ``shared(read)`` is ``read(candidates)``, computed once per batch for every predicate
    that asks with the same ``read`` (a function of the candidates alone, such as a
    module-level function): what the predicates need of the candidates is read once, not
    once per predicate. A :class:`ValueError` from ``read`` is raised to every caller.

    .. versionadded:: 0.2
    """

    @property
    def candidates(self) -> Sequence[PropertyView]: ...

    def shared(self, read: Callable[[Sequence[PropertyView]], Any]) -> Any: ...


@runtime_checkable
class RequirementContext(Protocol):
    """Handed to requirement builders: lets a builder build nested constraints.

    ``build_constraint(value)`` turns one constraint object (a mapping with exactly one
    evaluator key) into a predicate, through the registered constraint evaluators.
    ``bundle`` names the bundle whose requirement is being built (for error messages).
    """

    bundle: str

    def build_constraint(self, value: Any) -> Predicate: ...


# -- requirement forms ----------------------------------------------------------------
#
# What a requirement builds, described as data: the graph compiler reads a plainly
# shaped value through its form instead of calling the plugin's parse and builder for
# each distinct value. A form is a promise about the builder: for every value the form
# calls *plain*, the builder succeeds without reading the bundle's name, and its
# predicate is equal to another plain value's exactly when the two read to the same
# *key* (the form's ``tag`` and what it read), matches the bundles the form's *program*
# selects, and narrows its candidates to the form's lookups. A value that is not plain
# (or a catalog with any such value) is built by the plugin's callables, as without forms.


@attrs.frozen
class ValueFields:
    """A property type's plain values described as data: the loader reads them without ``parse``.

    ``unique_by_key`` (keyword only, of an identity type) promises that ``uniqueness`` gives
    equal rules (or ``None`` both times) for any two :class:`PackageIdentity` values of one
    package, whatever their versions, plain or not. The graph compiler then asks it once per
    package and reads each identity's package and version from the loader's columns, without
    a :class:`PackageIdentity` per property.

    Plain: a JSON object whose keys are exactly ``fields`` (in any order, each once), each
    value a string without an escape, non-empty unless its field is in ``may_be_empty``.
    The type promises, for every plain value: ``parse`` accepts it; ``index_keys`` (if the
    type has it) gives exactly one key, made of the first ``key_fields`` fields' values (one
    field: its value, more: a tuple in field order); and, for an identity type, ``parse``
    gives a :class:`PackageIdentity` of field 0's value and field 1's value (its version).
    A value that is not plain is read by calling ``parse`` and ``index_keys``, as without it.

    For an identity type, ``validated_by`` (when not ``None``) names the fields that alone
    decide what ``validate`` says: it says the same of every :class:`PackageIdentity` whose
    package (field 0) and version (field 1) are equal as far as they are named there, so a
    checker validates one identity per distinct value of those fields.

    .. versionadded:: 0.4
    """

    fields: tuple[str, ...] = attrs.field(converter=_strings)
    key_fields: int = 1
    unique_by_key: bool = attrs.field(default=False, kw_only=True)
    may_be_empty: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    validated_by: tuple[str, ...] | None = attrs.field(default=None, converter=attrs.converters.optional(_strings))

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.key_fields <= len(self.fields) or not 0 < len(self.fields) <= 8:
            raise ValueError("ValueFields: 1 to 8 fields, and at most as many key fields")
        if len(set(self.fields)) != len(self.fields) or not set(self.may_be_empty) <= set(self.fields):
            raise ValueError("ValueFields: distinct fields, and may_be_empty among them")
        if self.validated_by is not None and not set(self.validated_by) <= set(self.fields):
            raise ValueError("ValueFields: validated_by among the fields")


@attrs.frozen
class FieldsForm:
    """An object of string fields whose predicate matches the bundles filed under one index key.

    Plain: a JSON object with no key outside ``fields``, each field a string, non-empty
    unless it is in ``may_be_empty`` (such a field may also be absent: ``""``). The
    predicate's lookup is ``(lookup_type, key)``, the key being the fields' values in
    order (one field: its value), and it matches exactly the bundles filed under it.
    """

    tag: str
    fields: tuple[str, ...]
    lookup_type: str
    may_be_empty: tuple[str, ...] = ()


@attrs.frozen
class RangeForm:
    """An object naming a package and a version range, matched against identity properties.

    Plain: a JSON object with no key but ``name_field`` and ``range_field``, both
    non-empty strings, the range one that :func:`olmkit.catalog.semver.parse_range`
    reads. The predicate's lookup is ``(identity_type, name)``; it matches the bundles
    with a property of ``identity_type`` parsing to a :class:`PackageIdentity` of that
    package whose version, read tolerantly, is in the range.
    """

    tag: str
    name_field: str
    range_field: str
    identity_type: str


@attrs.frozen
class PatternForm:
    """An object with one string field that ``pattern`` matches whole: bundles carrying a property type.

    Plain: a JSON object with no key but ``field``, a string that the regular expression
    ``pattern`` matches entirely. The predicate matches the bundles carrying a property
    of the type the pattern's group ``group`` captured (inline types are not seen); it
    has no lookup. Its key holds the text and, when given, the message of the enclosing
    :class:`KeyedForm`.
    """

    tag: str
    field: str
    pattern: str
    group: int


@attrs.frozen
class EachForm:
    """An object holding a non-empty list of nested keyed objects (see :class:`KeyedForm`).

    Plain: a JSON object with no key but ``field``, a non-empty list of objects each
    plain for the constraint evaluators' forms. ``combine`` says what the predicate is:
    ``"all"`` (every child matches; the lookup of the first child that has a single
    lookup), ``"any"`` (at least one; every child's lookups when each child has some) or
    ``"none"`` (no child matches; no lookup).
    """

    tag: str
    field: str
    combine: str


@attrs.frozen
class KeyedForm:
    """An object with one key (besides ``ignore``) naming a constraint evaluator, whose form reads its value.

    Plain: a JSON object whose text is at most ``max_bytes`` long, whose ``message``
    field (if any) is a string, with exactly one key outside ``ignore``, registered as a
    constraint evaluator with a form for which its value is plain. Nested objects are
    read the same way (``ignore`` too, without the message). The message is part of the
    key of a :class:`PatternForm` when it is the only key (the message shown for it).
    """

    ignore: tuple[str, ...]
    message: str
    max_bytes: int


@attrs.frozen
class PropertyType:
    """A property type bundles may carry.

    Args:
        name: the property's ``type`` string.
        parse: turns the raw JSON value into the typed value the other callables receive;
            raises ``ValueError`` with a human message when the value is malformed.
        description: one line for ``olmkit plugins list`` and docs.
        identity: the parsed value is a :class:`PackageIdentity`; the catalog takes a
            bundle's version from it.
        inline: the property carries bundle content (manifests, metadata); it is kept
            out of the properties the resolver and CEL see.
        index_keys: keys under which the catalog index files a bundle carrying this
            property, so that predicates with a ``lookup`` find candidates without a scan.
        uniqueness: namespace-wide "at most one" rule the property imposes, if any.
        requirement: builds the predicate a bundle carrying this property depends on
            (the bundle needs at least one installed bundle matching it).
        prohibits: text (with ``{id}``) of a rule that forbids installing bundles that
            carry this property, or ``None``.
        validate: deeper checks than ``parse`` (compiling expressions, size limits);
            yields one message per problem.
        settings: what the record's answers depend on besides the catalog (a configured
            cluster version, a policy file's digest), as a hashable value. Called once per
            resolution; when it changes, the resolution graph is compiled again instead of
            reused from one compiled under other settings. ``None``: only on the catalog.

            .. versionadded:: 0.2
        form: what ``requirement`` builds, described as data (:class:`FieldsForm`,
            :class:`RangeForm` or :class:`KeyedForm`): the graph compiler then reads
            plain values without calling ``parse`` and ``requirement``. ``None``: it calls them.

            .. versionadded:: 0.3
        fields: its plain values described as data (:class:`ValueFields`): the catalog
            loader reads them, their index keys and (for an identity) versions without
            calling ``parse`` and ``index_keys``. ``None``: it calls them.

            .. versionadded:: 0.4

    Example:
        PropertyType(name="example.io/tier", parse=str, index_keys=lambda v: (v,))
    """

    name: str = attrs.field(converter=_name)
    parse: Callable[[Any], Any] = _identity
    description: str = ""
    identity: bool = False
    inline: bool = False
    index_keys: Callable[[Any], Iterable[Hashable]] | None = None
    uniqueness: Callable[[Any], Uniqueness | None] | None = None
    requirement: Callable[[Any, RequirementContext], Predicate] | None = None
    prohibits: str | None = None
    validate: Callable[[Any], Iterable[str]] | None = None
    settings: Callable[[], Hashable] | None = None
    form: FieldsForm | RangeForm | KeyedForm | None = None
    fields: ValueFields | None = None


@attrs.frozen
class ConstraintEvaluator:
    """One key of a compound constraint object (``gvk``, ``package``, ``cel``, ``all`` ...).

    Args:
        key: the key in the constraint object.
        build: turns the value under the key into a :class:`Predicate`; raises
            ``ValueError`` when it is malformed. Nested constraints are built through
            ``context.build_constraint``.
        description: one line for docs.
        settings: what the record's answers depend on besides the catalog (a configured
            cluster version, a policy file's digest), as a hashable value. Called once per
            resolution; when it changes, the resolution graph is compiled again instead of
            reused from one compiled under other settings. ``None``: only on the catalog.

            .. versionadded:: 0.2
        form: what ``build`` builds, described as data (:class:`FieldsForm`,
            :class:`RangeForm`, :class:`PatternForm` or :class:`EachForm`), for the
            graph compiler (see :attr:`PropertyType.form`).

            .. versionadded:: 0.3

    Example:
        ConstraintEvaluator(key="tier", build=lambda value, ctx: TierPredicate(value))
    """

    key: str = attrs.field(converter=_name)
    build: Callable[[Any, RequirementContext], Predicate]
    description: str = ""
    settings: Callable[[], Hashable] | None = None
    form: FieldsForm | RangeForm | PatternForm | EachForm | None = None


@attrs.frozen
class InstallStrategy:
    """A way to install an operator's workload (``spec.install.strategy`` of a CSV).

    Args:
        name: the strategy name.
        installer: factory of the object that installs, upgrades and checks the workload;
            its contract is defined by the lifecycle layer.
    """

    name: str = attrs.field(converter=_name)
    installer: Callable[..., Any]
    description: str = ""


@attrs.frozen
class CatalogSourceType:
    """A kind of catalog source (``spec.sourceType`` of a CatalogSource).

    Args:
        name: the source type.
        open: ``open(spec, context)`` returns a catalog source object for a
            CatalogSource ``spec`` mapping; the contract is defined in
            :mod:`olmkit.catalog.sources`.
    """

    name: str = attrs.field(converter=_name)
    open: Callable[..., Any]
    description: str = ""


@attrs.frozen
class AdmissionCheck:
    """A check run before an object is written to the cluster store.

    Args:
        name: the check's name.
        check: ``check(obj, context)`` yields one message per reason to refuse ``obj``.
        kinds: the object kinds it applies to (empty: all).
    """

    name: str = attrs.field(converter=_name)
    check: Callable[[Mapping[str, Any], Any], Iterable[str]]
    kinds: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    description: str = ""


@attrs.frozen
class SolverBackend:
    """A SAT solver the resolver can use.

    Args:
        name: the backend's name (``--solver NAME``).
        factory: returns a fresh solver object; see :mod:`olmkit._solver`.
    """

    name: str = attrs.field(converter=_name)
    factory: Callable[[], Any]
    description: str = ""


@attrs.frozen
class BundleContents:
    """One bundle read from where it is packaged (a directory, an archive, an image ...).

    Args:
        blob: the bundle as a file-based catalog bundle blob (schema, name, package,
            image when known, properties, and whatever else the format adds).
        manifests: the Kubernetes objects the bundle installs, as plain mappings, in the
            order the format read them.
        manifest_files: for each manifest, the file it was read from (same length).
        source: where the bundle was read from (for messages).
        package: the bundle's package.
        version: the bundle's version text, when it has one.
        channels: the channels the bundle asks to be published in.
        default_channel: the package's default channel the bundle asks for, if any.
        entry: the bundle's upgrade edges as a channel entry (named after the bundle).
        package_info: extra fields of a package blob built from this bundle
            (``description``, ``icon``), when the bundle is the newest of its package.

    .. versionadded:: 0.1
    """

    blob: Mapping[str, Any]
    manifests: tuple[Mapping[str, Any], ...]
    manifest_files: tuple[str, ...]
    source: str
    package: str
    version: str | None = None
    channels: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    default_channel: str | None = None
    entry: ChannelEntry | None = None
    package_info: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        """The bundle's name (the blob's ``name``)."""
        return str(self.blob.get("name", ""))


@attrs.frozen
class BundleFormat:
    """A way bundles are packaged, so that ``catalog render`` and templates can read them.

    Args:
        name: the format's name (``registry+v1`` ...).
        accepts: ``accepts(ref)`` tells whether ``ref`` (a path or another reference)
            is a bundle of this format; cheap, no parsing. The first format that accepts
            a reference reads it.
        read: ``read(ref, image=None)`` returns the :class:`BundleContents`; ``image`` is
            the image reference to record in the blob (``None``: the bundle has none).
            Raises :class:`~olmkit.errors.BundleError` (unreadable, exit code 2) or
            :class:`~olmkit.errors.InvalidBundleError` (breaks the format's rules, exit
            code 1), each naming the file and object.
        description: one line for ``olmkit plugins list`` and docs.

    Example:
        BundleFormat(name="tarball", accepts=lambda ref: ref.endswith(".tar"), read=read_tarball)

    .. versionadded:: 0.1
    """

    name: str = attrs.field(converter=_name)
    accepts: Callable[[str], bool]
    read: Callable[..., BundleContents]
    description: str = ""


@runtime_checkable
class TemplateContext(Protocol):
    """Handed to catalog templates: how to turn a bundle reference into a bundle blob.

    ``base_dir`` is the directory relative references are resolved against (the
    template file's directory). ``resolve_bundle(ref)`` returns the bundle blob a
    reference names: a bundle any registered :class:`BundleFormat` accepts (read with
    ``image=ref``), or a bundle whose ``image`` is ``ref`` in the catalogs the user gave;
    it raises :class:`~olmkit.errors.OlmkitError` naming the reference otherwise.
    """

    base_dir: Path

    def resolve_bundle(self, ref: str) -> Mapping[str, Any]: ...


@attrs.frozen
class CatalogTemplate:
    """A catalog template: a terse document that renders to file-based catalog blobs.

    Args:
        schema: the ``schema`` value of documents this template handles.
        render: ``render(document, context)`` returns the blobs (a list of mappings);
            ``context`` is a :class:`TemplateContext`. Raises ``ValueError`` with a
            message naming the offending field when the document is malformed (the
            command line adds the file name); errors from ``context`` pass through.
        description: one line for ``olmkit plugins list`` and docs.

    Example:
        CatalogTemplate(schema="example.io/one-channel", render=render_one_channel)

    .. versionadded:: 0.1
    """

    schema: str = attrs.field(converter=_name)
    render: Callable[[Mapping[str, Any], TemplateContext], list[dict[str, Any]]]
    description: str = ""
