"""The ``kube`` store backend: olmkit's store on a Kubernetes API server, through the official client.

:func:`connect` reads a kubeconfig as kubectl does and returns a :class:`KubeStore`, which
implements :class:`olmkit.store.Store`, so every cluster command and the controllers run on a
real cluster (or on ``olmkit serve``) unchanged. This is the only package that imports
``kubernetes``, and only when a store is opened: commands that do not use it do not pay its
import time.

Example:
    store = connect("~/.kube/config", context="kind-olm")
    store.get("v1", "Namespace", "default")

.. versionadded:: 0.3
"""

from __future__ import annotations

from olmkit.kube.config import KUBE_PREFIX, KubeconfigError, connect, kube_context, kubeconfig_path
from olmkit.kube.store import KubeStore, Resource
from olmkit.kube.transport import ApiUnreachable

__all__ = [
    "KUBE_PREFIX",
    "ApiUnreachable",
    "KubeStore",
    "KubeconfigError",
    "Resource",
    "connect",
    "kube_context",
    "kubeconfig_path",
]
