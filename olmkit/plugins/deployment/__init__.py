"""Built-in plugin: the ``deployment`` install strategy.

A CSV's ``spec.install.spec`` lists ``deployments`` (name, spec, label), ``permissions``
(namespaced rules per service account) and ``clusterPermissions`` (cluster-wide rules per
service account). This strategy:

* plans the RBAC an InstallPlan creates: a ServiceAccount, and a Role + RoleBinding (or a
  ClusterRole + ClusterRoleBinding) per permission entry;
* reports requirements the way upstream does: each service account ``Present`` when it
  exists and every rule is granted to it through bindings (``PresentNotSatisfied`` with
  the missing rules as dependents otherwise);
* installs: creates or updates each Deployment, owned by the CSV (a newer CSV takes over
  a Deployment of the same name from the one it replaces), and the service accounts the
  pod templates name; the CSV's OperatorGroup annotations (``olm.targetNamespaces`` ...)
  are projected into each pod template;
* checks health from each Deployment's status, as ``kubectl rollout status`` does; a
  ``ProgressDeadlineExceeded`` Deployment fails at once.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from olmkit import hookimpl
from olmkit._lazy import lazy_names
from olmkit.types import InstallStrategy

if TYPE_CHECKING:
    from olmkit.plugins.deployment._installer import DeploymentInstaller, rule_granted

__all__ = ["DeploymentInstaller", "rule_granted"]

NAME: Final = "deployment"

#: the names the strategy's work defines (imported on first use, with the lifecycle and store
#: modules it needs: a command that installs nothing does not pay for them)
__getattr__ = lazy_names(
    __name__,
    dict.fromkeys(
        ("DEFAULT_ACCOUNT", "PROJECTED_ANNOTATIONS", "RBAC_GROUP", "DeploymentInstaller", "rule_granted"),
        "olmkit.plugins.deployment._installer",
    ),
)


def _installer_for(context: Any) -> Any:
    """A :class:`DeploymentInstaller` for the install context (the strategy's installer factory)."""
    from olmkit.plugins.deployment._installer import DeploymentInstaller

    return DeploymentInstaller(context)


@hookimpl
def olmkit_install_strategies() -> Iterator[InstallStrategy]:
    """The ``deployment`` strategy."""
    yield InstallStrategy(name=NAME, installer=_installer_for, description="Deployments and RBAC of a CSV")
