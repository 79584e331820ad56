"""Built-in plugin: admission checks for OLM's kinds (what the CRDs' schemas would refuse).

Each check yields one message per problem, naming the field (``spec.source is required``),
so ``olmkit apply`` can refuse a manifest in one clear line before anything is written:

* ``Subscription``: ``spec.name`` and ``spec.source`` required strings; ``installPlanApproval``
  ``Automatic`` or ``Manual``; ``channel``, ``startingCSV``, ``sourceNamespace`` strings.
* ``CatalogSource``: ``spec.sourceType`` required string; ``priority`` an integer;
  ``updateStrategy.registryPoll.interval`` a Go duration (``30m0s``, ``10s``).
* ``OperatorGroup``: ``targetNamespaces`` a list of names, ``selector`` a label selector.
* ``InstallPlan``: ``spec.approval`` ``Automatic`` or ``Manual``; ``clusterServiceVersionNames``
  a list of names; ``approved`` a boolean.
* ``OperatorCondition``: ``spec.conditions`` / ``overrides`` conditions (type, status True,
  False or Unknown); ``deployments``, ``serviceAccounts`` lists of names.
* ``ClusterServiceVersion``: ``spec.install.strategy`` required string; ``spec.version``
  a strict semantic version when set; ``replaces``, ``skips``, ``installModes``, owned and
  required CRD descriptions well typed.
* ``CustomResourceDefinition``: ``spec.group``, ``spec.names.kind`` / ``plural``, ``scope``,
  ``versions`` (exactly one storage version); ``metadata.name`` is ``<plural>.<group>``.

Only the types and the rules the API server would enforce are checked; what an object
means (does the package exist?) is for the controllers.

.. versionadded:: 0.1
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from olmkit import hookimpl
from olmkit.catalog.semver import parse_version
from olmkit.types import AdmissionCheck

__all__ = [
    "check_catalog_source",
    "check_crd",
    "check_csv",
    "check_install_plan",
    "check_operator_condition",
    "check_operator_group",
    "check_subscription",
    "is_go_duration",
]

_OPERATORS: Final = "operators.coreos.com"
_APPROVALS: Final = ("Automatic", "Manual")

# Go's time.ParseDuration: "0", or signed decimal numbers each with a unit.
_DURATION: Final = re.compile(r"^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$")


def is_go_duration(text: Any) -> bool:
    """Whether ``text`` parses as a Go ``time.Duration`` (``30m0s``, ``1h``, ``10s``, ``0``)."""
    return isinstance(text, str) and bool(_DURATION.match(text))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# -- field checkers: each yields messages naming the field path ------------------------------


def _object(where: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> Iterator[str]:
    value = where.get(key)
    if value is None:
        if required:
            yield f"{path} is required"
    elif not isinstance(value, Mapping):
        yield f"{path} must be an object, not {_type_name(value)}"


def _string(
    where: Mapping[str, Any],
    key: str,
    path: str,
    *,
    required: bool = False,
    choices: tuple[str, ...] = (),
) -> Iterator[str]:
    value = where.get(key)
    if value is None or value == "":
        if required:
            yield f"{path} is required" + (f" ({' or '.join(choices)})" if choices else "")
        return
    if not isinstance(value, str):
        yield f"{path} must be a string, not {_type_name(value)}"
    elif choices and value not in choices:
        yield f"{path} must be {' or '.join(choices)}, not {value!r}"


def _boolean(where: Mapping[str, Any], key: str, path: str) -> Iterator[str]:
    value = where.get(key)
    if value is not None and not isinstance(value, bool):
        yield f"{path} must be true or false, not {_type_name(value)}"


def _integer(where: Mapping[str, Any], key: str, path: str) -> Iterator[str]:
    value = where.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        yield f"{path} must be an integer, not {_type_name(value)}"


def _strings(where: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> Iterator[str]:
    value = where.get(key)
    if value is None:
        if required:
            yield f"{path} is required"
        return
    if not isinstance(value, list):
        yield f"{path} must be a list of strings, not {_type_name(value)}"
        return
    for n, item in enumerate(value):
        if not isinstance(item, str) or not item:
            yield f"{path}[{n}] must be a non-empty string, not {_type_name(item)}"


def _spec(obj: Mapping[str, Any], *, required: bool = True) -> tuple[Mapping[str, Any] | None, list[str]]:
    """``(spec, problems)``: the spec when it is an object, else the problem."""
    problems = list(_object(obj, "spec", "spec", required=required))
    spec = obj.get("spec")
    return (spec if isinstance(spec, Mapping) else None), problems


# -- the checks --------------------------------------------------------------------------------


def check_subscription(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """A Subscription: package, source, approval and the optional strings."""
    spec, problems = _spec(obj)
    yield from problems
    if spec is None:
        return
    yield from _string(spec, "name", "spec.name", required=True)
    yield from _string(spec, "source", "spec.source", required=True)
    yield from _string(spec, "sourceNamespace", "spec.sourceNamespace")
    yield from _string(spec, "channel", "spec.channel")
    yield from _string(spec, "startingCSV", "spec.startingCSV")
    yield from _string(spec, "installPlanApproval", "spec.installPlanApproval", choices=_APPROVALS)
    yield from _object(spec, "config", "spec.config")


def check_catalog_source(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """A CatalogSource: source type, priority, poll interval, the descriptive strings."""
    spec, problems = _spec(obj)
    yield from problems
    if spec is None:
        return
    yield from _string(spec, "sourceType", "spec.sourceType", required=True)
    yield from _integer(spec, "priority", "spec.priority")
    for key in ("displayName", "publisher", "description", "path", "configMap", "image", "address"):
        yield from _string(spec, key, f"spec.{key}")
    yield from _strings(spec, "secrets", "spec.secrets")
    strategy = spec.get("updateStrategy")
    yield from _object(spec, "updateStrategy", "spec.updateStrategy")
    if isinstance(strategy, Mapping):
        poll = strategy.get("registryPoll")
        yield from _object(strategy, "registryPoll", "spec.updateStrategy.registryPoll")
        if isinstance(poll, Mapping) and poll.get("interval") is not None:
            interval = poll["interval"]
            if not is_go_duration(interval):
                yield (
                    "spec.updateStrategy.registryPoll.interval must be a duration such as 30m0s, 10s or 1h, "
                    f"not {interval!r}"
                )


_UPGRADE_STRATEGIES: Final = ("Default", "TechPreviewUnsafeFailForward")


def check_operator_group(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """An OperatorGroup: target namespaces, a selector (ignored when targetNamespaces is set)."""
    spec, problems = _spec(obj, required=False)
    yield from problems
    if spec is None:
        return
    yield from _strings(spec, "targetNamespaces", "spec.targetNamespaces")
    yield from _object(spec, "selector", "spec.selector")
    selector = spec.get("selector")
    if isinstance(selector, Mapping):
        from olmkit.store import StoreError, parse_selector  # only an OperatorGroup with a selector needs them

        try:
            parse_selector(selector)
        except StoreError as exc:
            where = getattr(exc, "field", "").replace("labelSelector", "spec.selector") or "spec.selector"
            yield f"{where}: {exc.message}"
        except TypeError:  # matchExpressions of the wrong type
            yield "spec.selector is not a label selector (matchLabels, matchExpressions)"
    yield from _string(spec, "serviceAccountName", "spec.serviceAccountName")
    yield from _boolean(spec, "staticProvidedAPIs", "spec.staticProvidedAPIs")
    yield from _object(spec, "upgradeStrategy", "spec.upgradeStrategy")
    strategy = spec.get("upgradeStrategy")
    if isinstance(strategy, Mapping):
        yield from _string(strategy, "name", "spec.upgradeStrategy.name", choices=_UPGRADE_STRATEGIES)


def check_install_plan(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """An InstallPlan: approval mode, approved flag, CSV names."""
    spec, problems = _spec(obj)
    yield from problems
    if spec is None:
        return
    yield from _string(spec, "approval", "spec.approval", required=True, choices=_APPROVALS)
    yield from _boolean(spec, "approved", "spec.approved")
    yield from _strings(spec, "clusterServiceVersionNames", "spec.clusterServiceVersionNames", required=True)
    yield from _integer(spec, "generation", "spec.generation")
    yield from _string(spec, "source", "spec.source")
    yield from _string(spec, "sourceNamespace", "spec.sourceNamespace")


def _conditions(spec: Mapping[str, Any], key: str) -> Iterator[str]:
    value = spec.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        yield f"spec.{key} must be a list of conditions, not {_type_name(value)}"
        return
    for n, cond in enumerate(value):
        path = f"spec.{key}[{n}]"
        if not isinstance(cond, Mapping):
            yield f"{path} must be an object, not {_type_name(cond)}"
            continue
        yield from _string(cond, "type", f"{path}.type", required=True)
        yield from _string(cond, "status", f"{path}.status", required=True, choices=("True", "False", "Unknown"))
        yield from _string(cond, "reason", f"{path}.reason")
        yield from _string(cond, "message", f"{path}.message")


def check_operator_condition(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """An OperatorCondition: conditions, overrides, the deployments and service accounts it covers."""
    spec, problems = _spec(obj, required=False)
    yield from problems
    if spec is None:
        return
    yield from _conditions(spec, "conditions")
    yield from _conditions(spec, "overrides")
    yield from _strings(spec, "deployments", "spec.deployments")
    yield from _strings(spec, "serviceAccounts", "spec.serviceAccounts")


def _api_descriptions(spec: Mapping[str, Any]) -> Iterator[str]:
    crds = spec.get("customresourcedefinitions")
    yield from _object(spec, "customresourcedefinitions", "spec.customresourcedefinitions")
    if not isinstance(crds, Mapping):
        return
    for which in ("owned", "required"):
        items = crds.get(which)
        path = f"spec.customresourcedefinitions.{which}"
        if items is None:
            continue
        if not isinstance(items, list):
            yield f"{path} must be a list, not {_type_name(items)}"
            continue
        for n, item in enumerate(items):
            if not isinstance(item, Mapping):
                yield f"{path}[{n}] must be an object, not {_type_name(item)}"
                continue
            yield from _string(item, "name", f"{path}[{n}].name", required=True)
            yield from _string(item, "version", f"{path}[{n}].version", required=True)
            yield from _string(item, "kind", f"{path}[{n}].kind", required=True)


def check_csv(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """A ClusterServiceVersion: install strategy, version, upgrade fields, install modes, APIs."""
    spec, problems = _spec(obj)
    yield from problems
    if spec is None:
        return
    yield from _string(spec, "displayName", "spec.displayName")
    version = spec.get("version")
    if version is not None:
        try:
            parse_version(version)
        except ValueError as exc:
            yield f"spec.version: {exc}"
    yield from _string(spec, "replaces", "spec.replaces")
    yield from _strings(spec, "skips", "spec.skips")
    yield from _string(spec, "minKubeVersion", "spec.minKubeVersion")
    install = spec.get("install")
    yield from _object(spec, "install", "spec.install", required=True)
    if isinstance(install, Mapping):
        yield from _string(install, "strategy", "spec.install.strategy", required=True)
        yield from _object(install, "spec", "spec.install.spec")
    modes = spec.get("installModes")
    if modes is not None:
        if not isinstance(modes, list):
            yield f"spec.installModes must be a list, not {_type_name(modes)}"
        else:
            for n, mode in enumerate(modes):
                if not isinstance(mode, Mapping):
                    yield f"spec.installModes[{n}] must be an object, not {_type_name(mode)}"
                    continue
                yield from _string(mode, "type", f"spec.installModes[{n}].type", required=True)
                if not isinstance(mode.get("supported"), bool):
                    yield f"spec.installModes[{n}].supported must be true or false"
    yield from _api_descriptions(spec)


def check_crd(obj: Mapping[str, Any], context: Any) -> Iterator[str]:
    """A CustomResourceDefinition: group, names, scope, versions (one storage version), its name."""
    spec, problems = _spec(obj)
    yield from problems
    if spec is None:
        return
    yield from _string(spec, "group", "spec.group", required=True)
    yield from _string(spec, "scope", "spec.scope", required=True, choices=("Namespaced", "Cluster"))
    names = spec.get("names")
    yield from _object(spec, "names", "spec.names", required=True)
    if isinstance(names, Mapping):
        yield from _string(names, "kind", "spec.names.kind", required=True)
        yield from _string(names, "plural", "spec.names.plural", required=True)
        yield from _string(names, "singular", "spec.names.singular")
        yield from _string(names, "listKind", "spec.names.listKind")
        yield from _strings(names, "shortNames", "spec.names.shortNames")
        plural, group = names.get("plural"), spec.get("group")
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(plural, str) and isinstance(group, str) and plural and group and name != f"{plural}.{group}":
            yield f"metadata.name must be spec.names.plural + '.' + spec.group ({plural}.{group}), not {name!r}"
    versions = spec.get("versions")
    if versions is None:
        if not isinstance(spec.get("version"), str):  # the v1beta1 form names one version
            yield "spec.versions is required"
        return
    if not isinstance(versions, list) or not versions:
        yield f"spec.versions must be a non-empty list, not {_type_name(versions)}"
        return
    storage = 0
    for n, version in enumerate(versions):
        path = f"spec.versions[{n}]"
        if not isinstance(version, Mapping):
            yield f"{path} must be an object, not {_type_name(version)}"
            continue
        yield from _string(version, "name", f"{path}.name", required=True)
        yield from _boolean(version, "served", f"{path}.served")
        yield from _boolean(version, "storage", f"{path}.storage")
        storage += version.get("storage") is True
    if storage != 1:
        yield f"spec.versions must mark exactly one version as storage: true (found {storage})"


def _record(name: str, check: Any, kind: str, description: str) -> AdmissionCheck:
    # attrs' frozenset converter is typed Iterable[_T_co] with the type variable unsolved,
    # which mypy cannot match; the value is a plain set of strings.
    return AdmissionCheck(name=name, check=check, kinds={kind}, description=description)  # type: ignore[arg-type]


@hookimpl
def olmkit_admission_checks() -> Iterator[AdmissionCheck]:
    """Register the checks for OLM's kinds (and for CustomResourceDefinitions)."""
    yield _record(
        "subscription",
        check_subscription,
        f"Subscription.{_OPERATORS}",
        "package, source and approval of a Subscription",
    )
    yield _record(
        "catalog-source",
        check_catalog_source,
        f"CatalogSource.{_OPERATORS}",
        "source type, priority and poll interval of a CatalogSource",
    )
    yield _record(
        "operator-group",
        check_operator_group,
        f"OperatorGroup.{_OPERATORS}",
        "target namespaces or selector of an OperatorGroup",
    )
    yield _record(
        "install-plan", check_install_plan, f"InstallPlan.{_OPERATORS}", "approval and CSV names of an InstallPlan"
    )
    yield _record(
        "operator-condition",
        check_operator_condition,
        f"OperatorCondition.{_OPERATORS}",
        "conditions and overrides of an OperatorCondition",
    )
    yield _record(
        "cluster-service-version",
        check_csv,
        f"ClusterServiceVersion.{_OPERATORS}",
        "install strategy, version and APIs of a ClusterServiceVersion",
    )
    yield _record(
        "custom-resource-definition",
        check_crd,
        "CustomResourceDefinition.apiextensions.k8s.io",
        "group, names and versions of a CustomResourceDefinition",
    )
