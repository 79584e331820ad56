"""The kinds the lifecycle works with: API versions, short names, scope.

One table, read by the controllers and the command line (``olmkit get csv`` ...).
Kinds that stored CustomResourceDefinitions add are found through the store (see
:func:`resolve_kind`).

.. versionadded:: 0.1
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from olmkit.errors import UsageError

if TYPE_CHECKING:
    from olmkit.store import Store

__all__ = [
    "CATALOG_SOURCE",
    "CLUSTER_ROLE",
    "CLUSTER_ROLE_BINDING",
    "CONFIG_MAP",
    "CRD",
    "CSV",
    "DEPLOYMENT",
    "INSTALL_PLAN",
    "KINDS",
    "LEASE",
    "NAMESPACE",
    "OLM_CONFIG",
    "OPERATOR",
    "OPERATOR_CONDITION",
    "OPERATOR_GROUP",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE_ACCOUNT",
    "SUBSCRIPTION",
    "Kind",
    "kind_of",
    "resolve_kind",
]


@attrs.frozen
class Kind:
    """A kind of object: its preferred apiVersion, plural and short names."""

    kind: str
    api_version: str
    plural: str
    short_names: tuple[str, ...] = ()
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def names(self) -> tuple[str, ...]:
        """Every spelling that names this kind on the command line (lower case)."""
        singular = self.kind.lower()
        qualified = (f"{self.plural}.{self.group}", f"{singular}.{self.group}") if self.group else ()
        return (singular, self.plural, *self.short_names, *qualified)


_OPERATORS_V1A1: Final = "operators.coreos.com/v1alpha1"

CSV: Final = Kind("ClusterServiceVersion", _OPERATORS_V1A1, "clusterserviceversions", ("csv", "csvs"))
INSTALL_PLAN: Final = Kind("InstallPlan", _OPERATORS_V1A1, "installplans", ("ip",))
CATALOG_SOURCE: Final = Kind("CatalogSource", _OPERATORS_V1A1, "catalogsources", ("catsrc",))
SUBSCRIPTION: Final = Kind("Subscription", _OPERATORS_V1A1, "subscriptions", ("sub", "subs"))
OPERATOR_GROUP: Final = Kind("OperatorGroup", "operators.coreos.com/v1", "operatorgroups", ("og",))
OPERATOR_CONDITION: Final = Kind("OperatorCondition", "operators.coreos.com/v2", "operatorconditions", ("condition",))
CRD: Final = Kind(
    "CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", ("crd", "crds"), False
)
DEPLOYMENT: Final = Kind("Deployment", "apps/v1", "deployments", ("deploy",))
SERVICE_ACCOUNT: Final = Kind("ServiceAccount", "v1", "serviceaccounts", ("sa",))
ROLE: Final = Kind("Role", "rbac.authorization.k8s.io/v1", "roles")
ROLE_BINDING: Final = Kind("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings")
CLUSTER_ROLE: Final = Kind("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", (), False)
CLUSTER_ROLE_BINDING: Final = Kind(
    "ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings", (), False
)
CONFIG_MAP: Final = Kind("ConfigMap", "v1", "configmaps", ("cm",))
SECRET: Final = Kind("Secret", "v1", "secrets")
NAMESPACE: Final = Kind("Namespace", "v1", "namespaces", ("ns",), False)
LEASE: Final = Kind("Lease", "coordination.k8s.io/v1", "leases")
OLM_CONFIG: Final = Kind("OLMConfig", "operators.coreos.com/v1", "olmconfigs", (), False)
OPERATOR: Final = Kind("Operator", "operators.coreos.com/v1", "operators", (), False)

#: The built-in table, by kind name.
KINDS: Final[Mapping[str, Kind]] = {
    k.kind: k
    for k in (
        CSV,
        INSTALL_PLAN,
        CATALOG_SOURCE,
        SUBSCRIPTION,
        OPERATOR_GROUP,
        OPERATOR_CONDITION,
        CRD,
        DEPLOYMENT,
        SERVICE_ACCOUNT,
        ROLE,
        ROLE_BINDING,
        CLUSTER_ROLE,
        CLUSTER_ROLE_BINDING,
        CONFIG_MAP,
        SECRET,
        NAMESPACE,
        LEASE,
        OLM_CONFIG,
        OPERATOR,
        Kind("Service", "v1", "services", ("svc",)),
        Kind("APIService", "apiregistration.k8s.io/v1", "apiservices", (), False),
        Kind("Event", "v1", "events", ("ev",)),
        # the optional objects a bundle may carry
        Kind("PrometheusRule", "monitoring.coreos.com/v1", "prometheusrules"),
        Kind("ServiceMonitor", "monitoring.coreos.com/v1", "servicemonitors"),
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", ("pdb",)),
        Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", ("pc",), False),
        Kind("VerticalPodAutoscaler", "autoscaling.k8s.io/v1", "verticalpodautoscalers", ("vpa",)),
        Kind("ConsoleYAMLSample", "console.openshift.io/v1", "consoleyamlsamples", (), False),
        Kind("ConsoleQuickStart", "console.openshift.io/v1", "consolequickstarts", (), False),
        Kind("ConsoleCLIDownload", "console.openshift.io/v1", "consoleclidownloads", (), False),
        Kind("ConsoleLink", "console.openshift.io/v1", "consolelinks", (), False),
    )
}

_BY_NAME: Final[Mapping[str, Kind]] = {name: k for k in KINDS.values() for name in k.names()}


def kind_of(obj: Mapping[str, Any]) -> Kind:
    """The :class:`Kind` of an object (built-in table, else made up from its apiVersion and kind)."""
    kind = str(obj.get("kind") or "")
    known = KINDS.get(kind)
    api_version = str(obj.get("apiVersion") or "")
    if known is not None and known.group == api_version.rpartition("/")[0]:
        return known
    return Kind(kind, api_version, kind.lower() + "s")


def resolve_kind(name: str, store: Store | None = None) -> Kind:
    """The kind a command-line name means (``csv``, ``subscriptions``, ``Deployment``, a CRD's plural ...).

    Names are matched case-insensitively against the built-in table, then against the
    names of CustomResourceDefinitions in ``store``.

    Raises:
        UsageError: no kind has that name.
    """
    key = name.strip().lower()
    found = _BY_NAME.get(key)
    if found is not None:
        return found
    if store is not None:
        for crd in store.list(CRD.api_version, CRD.kind):
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            spellings = {
                str(names.get("kind", "")).lower(),
                str(names.get("plural", "")).lower(),
                str(names.get("singular", "")).lower(),
                *(str(s).lower() for s in names.get("shortNames") or ()),
                str(crd["metadata"]["name"]).lower(),
            }
            if key in spellings:
                group = spec.get("group", "")
                versions = spec.get("versions") or [{"name": spec.get("version", "v1")}]
                storage = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"])
                return Kind(
                    str(names.get("kind")),
                    f"{group}/{storage}",
                    str(names.get("plural")),
                    tuple(names.get("shortNames") or ()),
                    spec.get("scope", "Namespaced") == "Namespaced",
                )
    names = set(_BY_NAME)
    if store is not None:
        for crd in store.list(CRD.api_version, CRD.kind):
            crd_names = (crd.get("spec") or {}).get("names") or {}
            names.update(str(crd_names.get(k, "")).lower() for k in ("plural", "singular", "kind") if crd_names.get(k))
    close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else " (try csv, sub, ip, catsrc, og, crd, deploy)"
    raise UsageError(f"unknown resource type {name!r}{hint}")
