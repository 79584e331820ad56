"""The API server's credentials: a CA, a server and a client certificate, a bearer token, a kubeconfig.

They are made once, with the ``openssl`` command line, and kept in a directory beside the
store; later starts reuse them (the server certificate is made again when the address it
must name changes). ``openssl`` is on every Linux and macOS machine and on CI images; the
``cryptography`` package would be a new compiled dependency that nothing else needs.

.. versionadded:: 0.2
"""

from __future__ import annotations

import base64
import ipaddress
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Final

import attrs
import yaml

from olmkit.errors import OlmkitError

__all__ = ["Credentials", "ensure_credentials", "write_kubeconfig"]

_DAYS: Final = "3650"
_CURVE: Final = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
CLIENT_USER: Final = "olmkit-admin"


@attrs.frozen
class Credentials:
    """Where the credentials are, and the bearer token."""

    directory: Path
    token: str

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.directory / "server.key"

    @property
    def client_cert(self) -> Path:
        return self.directory / "client.crt"

    @property
    def client_key(self) -> Path:
        return self.directory / "client.key"


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise OlmkitError("olmkit serve needs the openssl command to make its certificates; install OpenSSL")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OlmkitError(f"openssl {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")


def _sign(directory: Path, name: str, subject: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        "req",
        "-new",
        *_CURVE,
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        "-subj",
        subject,
        cwd=directory,
    )
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", f"{name}.crt", "-days", _DAYS, "-extfile", f"{name}.ext", cwd=directory,
    )  # fmt: skip
    for leftover in (f"{name}.csr", f"{name}.ext"):
        (directory / leftover).unlink(missing_ok=True)
    os.chmod(directory / f"{name}.key", 0o600)


def _alt_names(host: str) -> list[str]:
    names = {"DNS:localhost", "IP:127.0.0.1", "IP:0:0:0:0:0:0:0:1"}
    try:
        ipaddress.ip_address(host)
        if host not in ("0.0.0.0", "::"):
            names.add(f"IP:{host}")
    except ValueError:
        names.add(f"DNS:{host}")
    return sorted(names)


def ensure_credentials(directory: Path, host: str) -> Credentials:
    """The credentials in ``directory``, made first when missing (or when ``host`` is new).

    Raises:
        OlmkitError: ``openssl`` is missing or failed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    if not (directory / "ca.crt").exists() or not (directory / "ca.key").exists():
        _openssl(
            "req", "-x509", *_CURVE, "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", _DAYS,
            "-subj", "/CN=olmkit-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory,
        )  # fmt: skip
        os.chmod(directory / "ca.key", 0o600)
        for stale in ("server.crt", "client.crt"):
            (directory / stale).unlink(missing_ok=True)
    names = ",".join(_alt_names(host))
    names_file = directory / "server.names"
    if not (directory / "server.crt").exists() or not names_file.exists() or names_file.read_text() != names:
        _sign(
            directory,
            "server",
            "/CN=olmkit-apiserver",
            f"subjectAltName={names}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
        )
        names_file.write_text(names)
    if not (directory / "client.crt").exists():
        _sign(
            directory,
            "client",
            f"/O=system:masters/CN={CLIENT_USER}",
            "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n",
        )
    token_file = directory / "token"
    if not token_file.exists():
        token_file.write_text(secrets.token_urlsafe(32))
        os.chmod(token_file, 0o600)
    return Credentials(directory, token_file.read_text().strip())


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, credentials: Credentials) -> None:
    """A kubeconfig for ``server`` with the client certificate embedded (context ``olmkit``)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "olmkit", "cluster": {"server": server, "certificate-authority-data": _b64(credentials.ca)}}
        ],
        "users": [
            {
                "name": CLIENT_USER,
                "user": {
                    "client-certificate-data": _b64(credentials.client_cert),
                    "client-key-data": _b64(credentials.client_key),
                },
            }
        ],
        "contexts": [{"name": "olmkit", "context": {"cluster": "olmkit", "user": CLIENT_USER}}],
        "current-context": "olmkit",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    os.chmod(tmp, 0o600)
    tmp.replace(path)
