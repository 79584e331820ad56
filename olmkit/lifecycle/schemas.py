"""The built-in kinds: which versions are served, and the fields each declares.

:data:`SERVED` says which ``apiVersion`` s serve each built-in kind (a kind outside it is
known only when a stored CustomResourceDefinition serves it). :data:`SCHEMAS` holds, for
the kinds people write by hand, a structural OpenAPI schema of the fields the kind
declares, so that :func:`olmkit.lifecycle.apply.object_problems` refuses an unknown field
(``spec.chanel``) as the API server's strict field validation does. Parts whose content is
open-ended here (a pod template, a CSV's install strategy, a CRD's schema, any ``status``)
preserve unknown fields. Kinds without an entry are checked for kind and version only.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SCHEMAS", "SERVED", "builtin_schema", "served_versions"]

_ANY: Final[Mapping[str, Any]] = {"x-kubernetes-preserve-unknown-fields": True}
_STR: Final[Mapping[str, Any]] = {"type": "string"}
_BOOL: Final[Mapping[str, Any]] = {"type": "boolean"}
_INT: Final[Mapping[str, Any]] = {"type": "integer"}
_STRS: Final[Mapping[str, Any]] = {"type": "array", "items": _STR}
_STR_MAP: Final[Mapping[str, Any]] = {"type": "object", "additionalProperties": _STR}


def _obj(**properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties)}


def _list(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _kind(spec: Mapping[str, Any] | None = None, **top: Mapping[str, Any]) -> dict[str, Any]:
    """A resource: apiVersion, kind, metadata (implicit), the given top-level fields, an open status."""
    properties: dict[str, Any] = {"status": _ANY, **top}
    if spec is not None:
        properties["spec"] = spec
    return {"type": "object", "properties": properties}


_SELECTOR: Final = _obj(
    matchLabels=_STR_MAP,
    matchExpressions=_list(_obj(key=_STR, operator=_STR, values=_STRS)),
)
_POLICY_RULE: Final = _obj(apiGroups=_STRS, resources=_STRS, verbs=_STRS, resourceNames=_STRS, nonResourceURLs=_STRS)
_SUBJECT: Final = _obj(kind=_STR, apiGroup=_STR, name=_STR, namespace=_STR)
_ROLE_REF: Final = _obj(apiGroup=_STR, kind=_STR, name=_STR)

_SUBSCRIPTION: Final = _kind(
    _obj(
        source=_STR,
        sourceNamespace=_STR,
        name=_STR,
        channel=_STR,
        startingCSV=_STR,
        installPlanApproval={"type": "string", "enum": ["Automatic", "Manual"]},
        config=_obj(
            selector=_SELECTOR,
            nodeSelector=_STR_MAP,
            tolerations=_list(_ANY),
            resources=_ANY,
            envFrom=_list(_ANY),
            env=_list(_ANY),
            volumes=_list(_ANY),
            volumeMounts=_list(_ANY),
            affinity=_ANY,
            annotations=_STR_MAP,
        ),
    )
)
_CATALOG_SOURCE: Final = _kind(
    _obj(
        sourceType=_STR,
        priority=_INT,
        configMap=_STR,
        address=_STR,
        image=_STR,
        path=_STR,  # olmkit's file source type
        grpcPodConfig=_ANY,
        updateStrategy=_obj(registryPoll=_obj(interval=_STR)),
        secrets=_STRS,
        runAsRoot=_BOOL,
        publisher=_STR,
        displayName=_STR,
        description=_STR,
        icon=_obj(base64data=_STR, mediatype=_STR),
    )
)
_OPERATOR_GROUP: Final = _kind(
    _obj(
        selector=_SELECTOR,
        targetNamespaces=_STRS,
        serviceAccountName=_STR,
        staticProvidedAPIs=_BOOL,
        upgradeStrategy=_obj(name=_STR),
    )
)
_INSTALL_PLAN: Final = _kind(
    _obj(
        clusterServiceVersionNames=_STRS,
        approval={"type": "string", "enum": ["Automatic", "Manual"]},
        approved=_BOOL,
        source=_STR,
        sourceNamespace=_STR,
        generation=_INT,
    )
)
_CSV: Final = _kind(
    _obj(
        install=_ANY,
        customresourcedefinitions=_ANY,
        apiservicedefinitions=_ANY,
        webhookdefinitions=_list(_ANY),
        nativeAPIs=_list(_ANY),
        minKubeVersion=_STR,
        displayName=_STR,
        description=_STR,
        keywords=_STRS,
        maintainers=_list(_obj(name=_STR, email=_STR)),
        provider=_obj(name=_STR, url=_STR),
        links=_list(_obj(name=_STR, url=_STR)),
        icon=_list(_obj(base64data=_STR, mediatype=_STR)),
        version=_STR,
        maturity=_STR,
        replaces=_STR,
        skips=_STRS,
        labels=_STR_MAP,
        annotations=_STR_MAP,
        selector=_SELECTOR,
        installModes=_list(_obj(type=_STR, supported=_BOOL)),
        cleanup=_obj(enabled=_BOOL),
        relatedImages=_list(_obj(name=_STR, image=_STR)),
    )
)
_OPERATOR_CONDITION: Final = _kind(
    _obj(deployments=_STRS, serviceAccounts=_STRS, overrides=_list(_ANY), conditions=_list(_ANY))
)
_CRD: Final = _kind(
    _obj(
        group=_STR,
        names=_obj(plural=_STR, singular=_STR, shortNames=_STRS, kind=_STR, listKind=_STR, categories=_STRS),
        scope={"type": "string", "enum": ["Namespaced", "Cluster"]},
        versions=_list(
            _obj(
                name=_STR,
                served=_BOOL,
                storage=_BOOL,
                deprecated=_BOOL,
                deprecationWarning=_STR,
                schema=_obj(openAPIV3Schema=_ANY),
                subresources=_ANY,
                additionalPrinterColumns=_list(_ANY),
                selectableFields=_list(_ANY),
            )
        ),
        conversion=_ANY,
        preserveUnknownFields=_BOOL,
    )
)
_DEPLOYMENT: Final = _kind(
    _obj(
        replicas=_INT,
        selector=_SELECTOR,
        template=_ANY,
        strategy=_ANY,
        minReadySeconds=_INT,
        revisionHistoryLimit=_INT,
        paused=_BOOL,
        progressDeadlineSeconds=_INT,
    )
)
_CONFIG_MAP: Final = _kind(data=_STR_MAP, binaryData=_STR_MAP, immutable=_BOOL)
_SECRET: Final = _kind(data=_STR_MAP, stringData=_STR_MAP, type=_STR, immutable=_BOOL)
_NAMESPACE: Final = _kind(_obj(finalizers=_STRS))
_SERVICE_ACCOUNT: Final = _kind(
    secrets=_list(_ANY), imagePullSecrets=_list(_obj(name=_STR)), automountServiceAccountToken=_BOOL
)
_ROLE: Final = _kind(rules=_list(_POLICY_RULE))
_CLUSTER_ROLE: Final = _kind(rules=_list(_POLICY_RULE), aggregationRule=_obj(clusterRoleSelectors=_list(_SELECTOR)))
_BINDING: Final = _kind(subjects=_list(_SUBJECT), roleRef=_ROLE_REF)

_OPERATORS: Final = "operators.coreos.com"
_RBAC: Final = "rbac.authorization.k8s.io"

#: (group, kind) -> the versions that serve it. Upstream OLM serves OperatorGroup as v1
#: and v1alpha2, OperatorCondition as v1 and v2.
SERVED: Final[Mapping[tuple[str, str], tuple[str, ...]]] = {
    (_OPERATORS, "ClusterServiceVersion"): ("v1alpha1",),
    (_OPERATORS, "InstallPlan"): ("v1alpha1",),
    (_OPERATORS, "CatalogSource"): ("v1alpha1",),
    (_OPERATORS, "Subscription"): ("v1alpha1",),
    (_OPERATORS, "OperatorGroup"): ("v1", "v1alpha2"),
    (_OPERATORS, "OperatorCondition"): ("v2", "v1"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("v1",),
    ("apps", "Deployment"): ("v1",),
    ("", "ServiceAccount"): ("v1",),
    ("", "ConfigMap"): ("v1",),
    ("", "Secret"): ("v1",),
    ("", "Namespace"): ("v1",),
    ("", "Service"): ("v1",),
    ("", "Event"): ("v1",),
    (_RBAC, "Role"): ("v1",),
    (_RBAC, "RoleBinding"): ("v1",),
    (_RBAC, "ClusterRole"): ("v1",),
    (_RBAC, "ClusterRoleBinding"): ("v1",),
    ("coordination.k8s.io", "Lease"): ("v1",),
    ("apiregistration.k8s.io", "APIService"): ("v1",),
    ("monitoring.coreos.com", "PrometheusRule"): ("v1",),
    ("monitoring.coreos.com", "ServiceMonitor"): ("v1",),
    ("policy", "PodDisruptionBudget"): ("v1",),
    ("scheduling.k8s.io", "PriorityClass"): ("v1",),
    ("autoscaling.k8s.io", "VerticalPodAutoscaler"): ("v1",),
    ("console.openshift.io", "ConsoleYAMLSample"): ("v1",),
    ("console.openshift.io", "ConsoleQuickStart"): ("v1",),
    ("console.openshift.io", "ConsoleCLIDownload"): ("v1",),
    ("console.openshift.io", "ConsoleLink"): ("v1",),
}

#: (group, kind) -> the schema of its fields (the same for every served version).
SCHEMAS: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    (_OPERATORS, "Subscription"): _SUBSCRIPTION,
    (_OPERATORS, "CatalogSource"): _CATALOG_SOURCE,
    (_OPERATORS, "OperatorGroup"): _OPERATOR_GROUP,
    (_OPERATORS, "InstallPlan"): _INSTALL_PLAN,
    (_OPERATORS, "ClusterServiceVersion"): _CSV,
    (_OPERATORS, "OperatorCondition"): _OPERATOR_CONDITION,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _CRD,
    ("apps", "Deployment"): _DEPLOYMENT,
    ("", "ConfigMap"): _CONFIG_MAP,
    ("", "Secret"): _SECRET,
    ("", "Namespace"): _NAMESPACE,
    ("", "ServiceAccount"): _SERVICE_ACCOUNT,
    (_RBAC, "Role"): _ROLE,
    (_RBAC, "ClusterRole"): _CLUSTER_ROLE,
    (_RBAC, "RoleBinding"): _BINDING,
    (_RBAC, "ClusterRoleBinding"): _BINDING,
}


def served_versions(group: str, kind: str) -> tuple[str, ...] | None:
    """The versions that serve a built-in kind, or ``None`` when it is not built in."""
    return SERVED.get((group, kind))


def builtin_schema(group: str, kind: str) -> Mapping[str, Any] | None:
    """The declared fields of a built-in kind, or ``None`` when only its kind is checked."""
    return SCHEMAS.get((group, kind))
