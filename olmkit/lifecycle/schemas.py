"""The built-in kinds: which versions are served, and the fields each declares.

:data:`SERVED` says which ``apiVersion`` s serve each built-in kind (a kind outside it is
known only when a stored CustomResourceDefinition serves it). :data:`SCHEMAS` holds, for
the kinds people write by hand, a structural OpenAPI schema of the fields the kind
declares, so that :func:`olmkit.lifecycle.apply.object_problems` refuses an unknown field
(``spec.chanel``) as the API server's strict field validation does. Parts whose content is
open-ended here (a pod template, a CSV's install strategy, a CRD's schema, any ``status``)
preserve unknown fields. Kinds without an entry are checked for kind and version only.

The schemas of OLM's own kinds (group ``operators.coreos.com``) are the one source of their
OpenAPI: they carry descriptions and the ``required`` fields of upstream's CRDs, and
:mod:`olmkit.lifecycle.olmcrds` makes the CustomResourceDefinitions ``olmkit cluster init``
installs and the OpenAPI ``olmkit serve`` publishes (``kubectl explain``) from them.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SCHEMAS", "SERVED", "builtin_schema", "served_versions"]

_ANY: Final[Mapping[str, Any]] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STR: Final[Mapping[str, Any]] = {"type": "string"}
_BOOL: Final[Mapping[str, Any]] = {"type": "boolean"}
_INT: Final[Mapping[str, Any]] = {"type": "integer"}
_TIME: Final[Mapping[str, Any]] = {"type": "string", "format": "date-time"}
_STRS: Final[Mapping[str, Any]] = {"type": "array", "items": _STR}
_STR_MAP: Final[Mapping[str, Any]] = {"type": "object", "additionalProperties": _STR}


def _obj(**properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties)}


def _list(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _d(description: str, schema: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """``schema`` with a description (and ``required``, ``enum`` ... in ``extra``)."""
    return {"description": description, **schema, **extra}


def _kind(
    spec: Mapping[str, Any] | None = None,
    *,
    status: Mapping[str, Any] = _ANY,
    description: str | None = None,
    **top: Mapping[str, Any],
) -> dict[str, Any]:
    """A resource: apiVersion, kind, metadata (implicit), the given top-level fields, a status."""
    properties: dict[str, Any] = {"status": status, **top}
    if spec is not None:
        properties["spec"] = spec
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if description is not None:
        schema["description"] = description
    return schema


def _status(description: str, **properties: Mapping[str, Any]) -> dict[str, Any]:
    """A declared status that keeps what it does not declare (controllers write it, people read it)."""
    return {**_d(description, _obj(**properties)), "x-kubernetes-preserve-unknown-fields": True}


_SELECTOR: Final = _obj(
    matchLabels=_STR_MAP,
    matchExpressions=_list(_obj(key=_STR, operator=_STR, values=_STRS)),
)
_POLICY_RULE: Final = _obj(apiGroups=_STRS, resources=_STRS, verbs=_STRS, resourceNames=_STRS, nonResourceURLs=_STRS)
_SUBJECT: Final = _obj(kind=_STR, apiGroup=_STR, name=_STR, namespace=_STR)
_ROLE_REF: Final = _obj(apiGroup=_STR, kind=_STR, name=_STR)
_APPROVAL: Final = {"type": "string", "enum": ["Automatic", "Manual"]}
_CONDITIONS: Final = _d(
    "Conditions of the object, each with a type, status, reason and message.",
    _list(_ANY),
)
_REF: Final = {
    **_d("A reference to an object.", _obj(kind=_STR, namespace=_STR, name=_STR, uid=_STR, apiVersion=_STR)),
    "x-kubernetes-preserve-unknown-fields": True,
}

_SUBSCRIPTION: Final = _kind(
    _d(
        "SubscriptionSpec names the package, channel and catalog to install and update from.",
        _obj(
            source=_d("The name of the CatalogSource that provides the package.", _STR),
            sourceNamespace=_d("The namespace of that CatalogSource.", _STR),
            name=_d("The name of the package to subscribe to.", _STR),
            channel=_d("The channel of the package to follow (default: the package's default channel).", _STR),
            startingCSV=_d("The ClusterServiceVersion to install first, instead of the channel head.", _STR),
            installPlanApproval=_d("Whether InstallPlans are approved automatically or wait for a person.", _APPROVAL),
            config=_d(
                "Configuration of the operator's Deployment (env, resources, selectors ...).",
                _obj(
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
            ),
        ),
        required=["name", "source", "sourceNamespace"],
    ),
    status=_status(
        "SubscriptionStatus reports what is installed and what is being installed.",
        state=_d("Where the subscription is: UpgradePending, UpgradeAvailable or AtLatestKnown.", _STR),
        currentCSV=_d("The ClusterServiceVersion the subscription wants installed.", _STR),
        installedCSV=_d("The ClusterServiceVersion installed by the subscription.", _STR),
        installPlanRef=_d("A reference to the latest InstallPlan.", _REF),
        installplan=_d("The latest InstallPlan (name, kind, apiVersion, uuid).", _ANY),
        conditions=_CONDITIONS,
        catalogHealth=_d("The health of each catalog the subscription may use.", _list(_ANY)),
        lastUpdated=_d("When the status last changed.", _TIME),
    ),
    description="Subscription keeps operators up to date by tracking a channel of a package in a catalog.",
)
_CATALOG_SOURCE: Final = _kind(
    _d(
        "CatalogSourceSpec says where the catalog is and how it is shown.",
        _obj(
            sourceType=_d("How the catalog is read (file, grpc, configmap ...).", _STR),
            priority=_d("Preference among catalogs (higher first).", _INT),
            configMap=_d("The ConfigMap holding the catalog (sourceType configmap).", _STR),
            address=_d("host:port of a registry server (sourceType grpc).", _STR),
            image=_d("The catalog image (sourceType grpc).", _STR),
            path=_d("The directory of a file-based catalog (sourceType file, olmkit's own).", _STR),
            grpcPodConfig=_d("How the registry pod of an image catalog runs.", _ANY),
            updateStrategy=_d(
                "How often the catalog is read again.", _obj(registryPoll=_obj(interval=_d("A duration.", _STR)))
            ),
            secrets=_d("Pull secrets for the catalog image.", _STRS),
            runAsRoot=_BOOL,
            publisher=_d("Who publishes the catalog.", _STR),
            displayName=_d("The catalog's name for people.", _STR),
            description=_d("What the catalog holds.", _STR),
            icon=_obj(base64data=_STR, mediatype=_STR),
        ),
        required=["sourceType"],
    ),
    status=_status(
        "CatalogSourceStatus reports whether the catalog could be read.",
        connectionState=_d(
            "The last observed state of the catalog connection.",
            {
                **_obj(address=_STR, lastObservedState=_STR, lastConnect=_TIME),
                "x-kubernetes-preserve-unknown-fields": True,
            },
        ),
        latestImageRegistryPoll=_d("When the catalog was last polled.", _TIME),
        message=_STR,
        reason=_STR,
    ),
    description="CatalogSource is a repository of operator packages (a file-based catalog or a registry server).",
)
_OPERATOR_GROUP: Final = _kind(
    _d(
        "OperatorGroupSpec names the target namespaces.",
        _obj(
            selector=_d("A label selector choosing the target namespaces.", _SELECTOR),
            targetNamespaces=_d("The namespaces the operators watch (empty: all namespaces).", _STRS),
            serviceAccountName=_d("The ServiceAccount operators of this group are installed with.", _STR),
            staticProvidedAPIs=_d("Do not update the olm.providedAPIs annotation.", _BOOL),
            upgradeStrategy=_d("How operators of this group are upgraded.", _obj(name=_STR)),
        ),
    ),
    status=_status(
        "OperatorGroupStatus reports the namespaces selected.",
        namespaces=_d("The target namespaces (empty string: all namespaces).", _STRS),
        lastUpdated=_d("When the status last changed.", _TIME),
        conditions=_CONDITIONS,
        serviceAccountRef=_d("The ServiceAccount of spec.serviceAccountName.", _REF),
    ),
    description="OperatorGroup selects the namespaces the operators of its namespace watch.",
)
_INSTALL_PLAN: Final = _kind(
    _d(
        "InstallPlanSpec names the ClusterServiceVersions to install and whether a person approved them.",
        _obj(
            clusterServiceVersionNames=_d("The ClusterServiceVersions this plan installs.", _STRS),
            approval=_d("Automatic or Manual approval.", _APPROVAL),
            approved=_d("Whether the plan may be executed.", _BOOL),
            source=_d("The CatalogSource the plan was resolved from.", _STR),
            sourceNamespace=_d("That CatalogSource's namespace.", _STR),
            generation=_d("The plan's generation in its namespace.", _INT),
        ),
        required=["approval", "approved", "clusterServiceVersionNames"],
    ),
    status=_status(
        "InstallPlanStatus reports the plan's phase and the status of each step.",
        phase=_d("Planning, RequiresApproval, Installing, Complete or Failed.", _STR),
        conditions=_CONDITIONS,
        plan=_d("The steps: each resource to create and its status.", _list(_ANY)),
        bundleLookups=_d("Bundles still to unpack.", _list(_ANY)),
        catalogSources=_d("The catalogs the plan was resolved from.", _STRS),
        startTime=_d("When the plan started installing.", _TIME),
        message=_STR,
    ),
    description="InstallPlan lists the resources to create to install or upgrade operators, and their progress.",
)
_CSV: Final = _kind(
    _d(
        "ClusterServiceVersionSpec: display data, owned and required APIs, install strategy.",
        _obj(
            install=_d("The install strategy (a Deployment by default).", _ANY),
            customresourcedefinitions=_d("The CRD-backed APIs the operator owns and requires.", _ANY),
            apiservicedefinitions=_d("The aggregated APIs the operator owns and requires.", _ANY),
            webhookdefinitions=_d("The admission and conversion webhooks the operator serves.", _list(_ANY)),
            nativeAPIs=_d("Built-in APIs the operator needs.", _list(_ANY)),
            minKubeVersion=_d("The lowest Kubernetes version the operator runs on.", _STR),
            displayName=_d("The operator's name for people.", _STR),
            description=_d("What the operator does.", _STR),
            keywords=_STRS,
            maintainers=_list(_obj(name=_STR, email=_STR)),
            provider=_obj(name=_STR, url=_STR),
            links=_list(_obj(name=_STR, url=_STR)),
            icon=_list(_obj(base64data=_STR, mediatype=_STR)),
            version=_d("The operator's semantic version.", _STR),
            maturity=_STR,
            replaces=_d("The ClusterServiceVersion this one upgrades.", _STR),
            skips=_d("Versions this one skips.", _STRS),
            labels=_STR_MAP,
            annotations=_STR_MAP,
            selector=_SELECTOR,
            installModes=_d(
                "The OperatorGroup shapes the operator supports.",
                _list(_obj(type=_STR, supported=_BOOL)),
            ),
            cleanup=_obj(enabled=_BOOL),
            relatedImages=_list(_obj(name=_STR, image=_STR)),
        ),
        required=["displayName", "install"],
    ),
    status=_status(
        "ClusterServiceVersionStatus reports the install phase and why.",
        phase=_d("Pending, InstallReady, Installing, Succeeded, Failed, Replacing or Deleting.", _STR),
        reason=_d("A one-word reason for the phase.", _STR),
        message=_d("What happened, for people.", _STR),
        conditions=_d("The phases the CSV went through.", _list(_ANY)),
        requirementStatus=_d("The status of each requirement.", _list(_ANY)),
        lastUpdateTime=_TIME,
        lastTransitionTime=_TIME,
        certsLastUpdated=_TIME,
        certsRotateAt=_TIME,
        cleanup=_ANY,
    ),
    description="ClusterServiceVersion describes one version of an operator: what it owns, requires and runs.",
)
_OPERATOR_CONDITION: Final = _kind(
    _d(
        "OperatorConditionSpec: conditions the operator reports and overrides an administrator sets.",
        _obj(
            deployments=_STRS,
            serviceAccounts=_STRS,
            overrides=_d("Conditions set by an administrator; they win over the operator's.", _list(_ANY)),
            conditions=_d("Conditions the operator reports (v1).", _list(_ANY)),
        ),
    ),
    status=_status("OperatorConditionStatus: the conditions OLM acts on.", conditions=_CONDITIONS),
    description="OperatorCondition lets an operator tell OLM whether it may be upgraded (Upgradeable).",
)
_OLM_CONFIG: Final = _kind(
    _d(
        "OLMConfigSpec: features of OLM that can be switched.",
        _obj(
            features=_d(
                "Configurable features.",
                _obj(disableCopiedCSVs=_d("Do not copy the CSVs of operators that watch all namespaces.", _BOOL)),
            )
        ),
    ),
    status=_status("OLMConfigStatus", conditions=_CONDITIONS),
    description="OLMConfig configures OLM (the object named cluster).",
)
_OPERATOR: Final = _kind(
    _d("OperatorSpec: empty; the status lists the operator's components.", _ANY),
    status=_status(
        "OperatorStatus: the resources that make up the operator.",
        components=_d("The components, selected by label.", _ANY),
    ),
    description="Operator represents a cluster operator and the resources that compose it.",
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
    (_OPERATORS, "OLMConfig"): ("v1",),
    (_OPERATORS, "Operator"): ("v1",),
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
    (_OPERATORS, "OLMConfig"): _OLM_CONFIG,
    (_OPERATORS, "Operator"): _OPERATOR,
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
