"""Connecting to an API server the way kubectl does: a kubeconfig file and one of its contexts.

The kubeconfig is ``--kubeconfig PATH``, else ``$KUBECONFIG`` (several files joined by ``:``
are merged, as kubectl merges them), else ``~/.kube/config``; the context is ``--context NAME``,
else the file's ``current-context``. The official client reads it (certificates, tokens, exec
credential plugins), so what works for kubectl works here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from olmkit.errors import UsageError
from olmkit.kube.store import KubeStore

__all__ = ["KUBE_PREFIX", "KubeconfigError", "connect", "kube_context", "kubeconfig_path"]

#: ``OLMKIT_STORE`` (or ``--store``) values that choose the kube backend: ``kube`` or ``kube:CONTEXT``.
KUBE_PREFIX: Final = "kube"


class KubeconfigError(UsageError):
    """The kubeconfig cannot be used: missing, malformed, or without the context asked for."""


def kube_context(store: str | None) -> tuple[bool, str | None]:
    """Whether a ``--store``/``OLMKIT_STORE`` value names the kube backend, and the context it names.

    ``kube`` is the kubeconfig's current context, ``kube:NAME`` the context ``NAME``.
    """
    if not store:
        return False, None
    name, sep, context = store.partition(":")
    if name != KUBE_PREFIX:
        return False, None
    return True, (context or None) if sep else None


def kubeconfig_path(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """The kubeconfig to read: ``path``, else ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = os.environ if env is None else env
    if path:
        return os.fspath(path)
    return env.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())


def connect(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    history: int = 10_000,
) -> KubeStore:
    """A :class:`KubeStore` on the API server of a kubeconfig's context.

    No request is made: an unreachable server shows at the first store call (as
    :class:`~olmkit.kube.transport.ApiUnreachable`, naming the server, file and context).

    Raises:
        KubeconfigError: no kubeconfig file, a malformed one, or no such context.
    """
    from kubernetes import config as kube_config  # the client's import is heavy: only when used

    where = kubeconfig_path(kubeconfig, env)
    files = [p for p in where.split(os.pathsep) if p]
    if not any(os.path.isfile(os.path.expanduser(p)) for p in files):
        raise KubeconfigError(f"no kubeconfig at {where} (give --kubeconfig PATH or set KUBECONFIG)")
    try:
        contexts, active = kube_config.list_kube_config_contexts(config_file=where)  # type: ignore[no-untyped-call]
        names = [str(c.get("name")) for c in contexts or [] if isinstance(c, Mapping)]
        chosen = context or (str(active.get("name")) if isinstance(active, Mapping) else None)
        if not chosen:
            raise KubeconfigError(f"kubeconfig {where} names no current-context (give --context NAME)")
        if chosen not in names:
            known = ", ".join(names) or "none"
            raise KubeconfigError(f"kubeconfig {where} has no context {chosen!r} (its contexts: {known})")
        api_client = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=where, context=chosen, persist_config=False
        )
    except KubeconfigError:
        raise
    except (kube_config.ConfigException, OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
        detail = _problem(exc)
        raise KubeconfigError(f"kubeconfig {where}: cannot use it{_for(context)}: {detail}") from None
    except Exception as exc:  # YAML errors and others the client does not wrap
        raise KubeconfigError(f"kubeconfig {where}: cannot read it: {_problem(exc)}") from None
    return KubeStore(api_client, where=f"kubeconfig {where}, context {chosen}", history=history)


def _problem(exc: BaseException) -> str:
    """What is wrong, in one line (for a YAML error: its problem and where)."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"not valid YAML: {problem} (line {mark.line + 1}, column {mark.column + 1})"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _for(context: str | None) -> str:
    return f" with context {context!r}" if context else ""
