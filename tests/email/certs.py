"""A private CA and a certificate for 127.0.0.1 signed by it, made by the ``openssl`` CLI (the
one Debian's Dovecot packages bring along): no test dependency for two small files."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
SERVER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""


@dataclass(frozen=True)
class Certs:
    ca: Path  # the CA's certificate: what a client given ca_file trusts
    cert: Path  # the server's certificate (for 127.0.0.1 and localhost)
    key: Path  # its private key

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_certs(folder: Path) -> Certs:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, request = folder / "server.pem", folder / "server.key", folder / "server.csr"
    (folder / "server.ext").write_text(SERVER_EXTENSIONS)
    for command in (
        ["req", "-x509", *EC, "-keyout", ca_key, "-out", ca, "-days", "2",
         "-subj", "/CN=smarthole test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", "-new", *EC, "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "2", "-extfile", folder / "server.ext"],
    ):  # fmt: skip
        done = subprocess.run([openssl, *map(str, command)], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode()
    for path in (cert, key, ca):
        path.chmod(0o644)  # read by Dovecot's unprivileged processes too
    return Certs(ca, cert, key)
