"""The ``registry+v1`` format's names: annotation keys, object kinds and the property types it derives."""

from __future__ import annotations

from typing import Final

MEDIA_TYPE: Final = "registry+v1"
ANNOTATION_PREFIX: Final = "operators.operatorframework.io.bundle."
MEDIATYPE_KEY: Final = ANNOTATION_PREFIX + "mediatype.v1"
MANIFESTS_KEY: Final = ANNOTATION_PREFIX + "manifests.v1"
METADATA_KEY: Final = ANNOTATION_PREFIX + "metadata.v1"
PACKAGE_KEY: Final = ANNOTATION_PREFIX + "package.v1"
CHANNELS_KEY: Final = ANNOTATION_PREFIX + "channels.v1"
DEFAULT_CHANNEL_KEY: Final = ANNOTATION_PREFIX + "channel.default.v1"

PROPERTIES_ANNOTATION: Final = "olm.properties"
SKIP_RANGE_ANNOTATION: Final = "olm.skipRange"

CSV_KIND: Final = "ClusterServiceVersion"
CRD_KIND: Final = "CustomResourceDefinition"
CRD_API_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")

#: Kinds a registry+v1 bundle may hold: the CSV, CRDs and the spec's optional objects
#: (``ConsoleYAMLSample`` is how the API spells the spec's ``ConsoleYamlSample``).
SUPPORTED_KINDS: Final = frozenset(
    {
        CSV_KIND,
        CRD_KIND,
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "ConsoleCLIDownload",
        "ConsoleLink",
        "ConsoleQuickStart",
        "ConsoleYAMLSample",
        "ConsoleYamlSample",
        "PodDisruptionBudget",
        "PriorityClass",
        "PrometheusRule",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "VerticalPodAutoscaler",
    }
)

PACKAGE: Final = "olm.package"
GVK: Final = "olm.gvk"
GVK_REQUIRED: Final = "olm.gvk.required"
PACKAGE_REQUIRED: Final = "olm.package.required"
LABEL_REQUIRED: Final = "olm.label.required"
CONSTRAINT: Final = "olm.constraint"
BUNDLE_OBJECT: Final = "olm.bundle.object"
CSV_METADATA: Final = "olm.csv.metadata"
INLINE: Final = (BUNDLE_OBJECT, CSV_METADATA)

METADATA_SUFFIXES: Final = (".yaml", ".yml", ".json")
