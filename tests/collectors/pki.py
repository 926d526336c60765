"""TLS material for the collector tests: a CA, server and client certificates, another CA."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path

    def read(self, path: Path) -> bytes:
        return path.read_bytes()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(subject: str, issuer_key: Any, issuer: x509.Name, ca: bool,
           sans: list[x509.GeneralName] | None = None) -> tuple[Any, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _write(path: Path, key: Any, cert: x509.Certificate) -> tuple[Path, Path]:
    cert_path, key_path = path.with_suffix(".pem"), path.with_suffix(".key")
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def issue_pki(root: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, another CA,
    written under ``root``."""
    ca_key, ca_cert = _issue("rocewatch test CA", None, _name("rocewatch test CA"), True)
    ca_path, _ = _write(root / "ca", ca_key, ca_cert)
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    skey, scert = _issue("gnmi-target", ca_key, ca_cert.subject, False, sans)
    server_cert, server_key = _write(root / "server", skey, scert)
    ckey, ccert = _issue("rocewatch-collector", ca_key, ca_cert.subject, False)
    client_cert, client_key = _write(root / "client", ckey, ccert)
    okey, ocert = _issue("some other CA", None, _name("some other CA"), True)
    other_ca, _ = _write(root / "other-ca", okey, ocert)
    return Pki(ca_path, server_cert, server_key, client_cert, client_key, other_ca)
