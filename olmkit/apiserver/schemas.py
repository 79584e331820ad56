"""OpenAPI v3 schemas of the custom resources served without a stored CRD (for ``kubectl explain``).

They describe the fields olmkit reads; unknown fields are preserved (as a cluster without
pruning would keep them), so the schemas document rather than restrict. A stored CRD for the
same kind replaces its schema.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SCHEMAS", "object_schema"]


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _obj(description: str, properties: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": description, **extra}
    if properties:
        schema["properties"] = dict(properties)
    else:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def object_schema(description: str, spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None) -> dict[str, Any]:
    """The schema of a whole object: apiVersion, kind, metadata, spec and status."""
    properties: dict[str, Any] = {
        "apiVersion": _s("APIVersion defines the versioned schema of this representation of an object."),
        "kind": _s("Kind is a string value representing the REST resource this object represents."),
        "metadata": {"type": "object", "description": "Standard object's metadata."},
    }
    if spec is not None:
        properties["spec"] = spec
    if status is not None:
        properties["status"] = status
    return {"type": "object", "description": description, "properties": properties}


_CONDITIONS: Final = {
    "type": "array",
    "description": "Conditions of the object, each with a type, status, reason and message.",
    "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}

_SUBSCRIPTION: Final = object_schema(
    "Subscription keeps operators up to date by tracking a channel of a package in a catalog.",
    _obj(
        "SubscriptionSpec names the package, channel and catalog to install and update from.",
        {
            "name": _s("The name of the package to subscribe to."),
            "channel": _s("The channel of the package to follow (default: the package's default channel)."),
            "source": _s("The name of the CatalogSource that provides the package."),
            "sourceNamespace": _s("The namespace of that CatalogSource."),
            "startingCSV": _s("The ClusterServiceVersion to install first, instead of the channel head."),
            "installPlanApproval": _s(
                "Whether InstallPlans are approved automatically or wait for a person.", enum=["Automatic", "Manual"]
            ),
            "config": _obj("Configuration of the operator's Deployment (env, resources, selectors ...)."),
        },
        required=["name", "source", "sourceNamespace"],
    ),
    _obj(
        "SubscriptionStatus reports what is installed and what is being installed.",
        {
            "state": _s("Where the subscription is: UpgradePending, UpgradeAvailable or AtLatestKnown."),
            "currentCSV": _s("The ClusterServiceVersion the subscription wants installed."),
            "installedCSV": _s("The ClusterServiceVersion installed by the subscription."),
            "installPlanRef": _obj("A reference to the latest InstallPlan."),
            "conditions": _CONDITIONS,
            "lastUpdated": _s("When the status last changed.", format="date-time"),
        },
    ),
)

_INSTALL_PLAN: Final = object_schema(
    "InstallPlan lists the resources to create to install or upgrade operators, and their progress.",
    _obj(
        "InstallPlanSpec names the ClusterServiceVersions to install and whether a person approved them.",
        {
            "clusterServiceVersionNames": {
                "type": "array",
                "description": "The ClusterServiceVersions this plan installs.",
                "items": {"type": "string"},
            },
            "approval": _s("Automatic or Manual approval.", enum=["Automatic", "Manual"]),
            "approved": {"type": "boolean", "description": "Whether the plan may be executed."},
            "generation": {"type": "integer", "description": "The plan's generation in its namespace."},
        },
        required=["approval", "approved", "clusterServiceVersionNames"],
    ),
    _obj(
        "InstallPlanStatus reports the plan's phase and the status of each step.",
        {
            "phase": _s("Planning, RequiresApproval, Installing, Complete or Failed."),
            "conditions": _CONDITIONS,
            "plan": {
                "type": "array",
                "description": "The steps: each resource to create and its status.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    ),
)

_CATALOG_SOURCE: Final = object_schema(
    "CatalogSource is a repository of operator packages (a file-based catalog).",
    _obj(
        "CatalogSourceSpec says where the catalog is and how it is shown.",
        {
            "sourceType": _s("How the catalog is read (file, grpc, configmap ...)."),
            "path": _s("The directory of a file-based catalog (sourceType file)."),
            "address": _s("host:port of a registry server (sourceType grpc)."),
            "image": _s("The catalog image (sourceType grpc)."),
            "displayName": _s("The catalog's name for people."),
            "publisher": _s("Who publishes the catalog."),
            "priority": {"type": "integer", "description": "Preference among catalogs (higher first)."},
            "updateStrategy": _obj("How often the catalog is read again (registryPoll.interval)."),
        },
        required=["sourceType"],
    ),
    _obj(
        "CatalogSourceStatus reports whether the catalog could be read.",
        {"connectionState": _obj("The last observed state of the catalog connection.")},
    ),
)

_OPERATOR_GROUP: Final = object_schema(
    "OperatorGroup selects the namespaces the operators of its namespace watch.",
    _obj(
        "OperatorGroupSpec names the target namespaces.",
        {
            "targetNamespaces": {
                "type": "array",
                "description": "The namespaces the operators watch (empty: all namespaces).",
                "items": {"type": "string"},
            },
            "selector": _obj("A label selector choosing the target namespaces."),
            "serviceAccountName": _s("The ServiceAccount operators of this group are installed with."),
            "upgradeStrategy": _obj("How operators of this group are upgraded."),
        },
    ),
    _obj(
        "OperatorGroupStatus reports the namespaces selected.",
        {"namespaces": {"type": "array", "items": {"type": "string"}}},
    ),
)

_CSV: Final = object_schema(
    "ClusterServiceVersion describes one version of an operator: what it owns, requires and runs.",
    _obj(
        "ClusterServiceVersionSpec: display data, owned and required APIs, install strategy.",
        {
            "displayName": _s("The operator's name for people."),
            "version": _s("The operator's semantic version."),
            "replaces": _s("The ClusterServiceVersion this one upgrades."),
            "skips": {"type": "array", "items": {"type": "string"}, "description": "Versions this one skips."},
            "install": _obj("The install strategy (a Deployment by default)."),
            "customresourcedefinitions": _obj("The APIs the operator owns and requires."),
            "installModes": {
                "type": "array",
                "description": "The OperatorGroup shapes the operator supports.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        **{"x-kubernetes-preserve-unknown-fields": True},
    ),
    _obj(
        "ClusterServiceVersionStatus reports the install phase and why.",
        {
            "phase": _s("Pending, InstallReady, Installing, Succeeded, Failed, Replacing or Deleting."),
            "reason": _s("A one-word reason for the phase."),
            "message": _s("What happened, for people."),
            "conditions": _CONDITIONS,
            "requirementStatus": {
                "type": "array",
                "description": "The status of each requirement.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    ),
)

#: By (group, kind).
SCHEMAS: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    ("operators.coreos.com", "Subscription"): _SUBSCRIPTION,
    ("operators.coreos.com", "InstallPlan"): _INSTALL_PLAN,
    ("operators.coreos.com", "CatalogSource"): _CATALOG_SOURCE,
    ("operators.coreos.com", "OperatorGroup"): _OPERATOR_GROUP,
    ("operators.coreos.com", "ClusterServiceVersion"): _CSV,
}
