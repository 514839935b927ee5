"""Throwaway PKI for TLS tests: a CA, a server certificate and client certificates, made with the
``openssl`` command line (the ``cryptography`` package is not a dependency).

``make_pki(directory)`` writes PEM files and returns their paths; keys are EC P-256 (fast to make).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

KEY_PASSWORD = "s3cret-key-pass"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path          # subject O=Acme, CN=alice
    client_key: Path
    client_key_encrypted: Path  # the same key, encrypted with KEY_PASSWORD
    nocn_cert: Path            # a client certificate whose subject has no CN
    nocn_key: Path
    other_ca: Path             # a CA that signed nothing here


def openssl_available() -> bool:
    return shutil.which("openssl") is not None


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: Path, name: str) -> None:
    _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN={name}",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         cwd=d)


def _leaf(d: Path, name: str, subject: str, extensions: str) -> None:
    (d / f"{name}.ext").write_text(
        "basicConstraints=CA:FALSE\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
        + extensions)
    _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)


def make_pki(d: Path) -> Pki:
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "other-ca")
    _leaf(d, "server", "/CN=localhost",
          "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _leaf(d, "client", "/O=Acme/CN=alice", "extendedKeyUsage=clientAuth\n")
    _leaf(d, "nocn", "/C=US/O=Acme, Inc./OU=ops", "extendedKeyUsage=clientAuth\n")
    _run("pkcs8", "-topk8", "-in", "client.key", "-out", "client-enc.key", "-v2", "aes-256-cbc",
         "-passout", f"pass:{KEY_PASSWORD}", cwd=d)
    return Pki(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key",
               d / "client-enc.key", d / "nocn.pem", d / "nocn.key", d / "other-ca.pem")
