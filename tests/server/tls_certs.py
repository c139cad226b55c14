"""Certificates made in the test, with the openssl command line (bootstrap.sh installs it):
never stored in the repo, valid for a day.

`make_pki(directory)` writes a CA, a second unrelated CA, a switch certificate naming localhost
and 127.0.0.1, a client certificate of the first CA and one of the second, each with its key.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class PKI:
    ca: Path                 # the CA that signs `switch` and `client`
    other_ca: Path           # an unrelated CA, signs `rogue`
    switch: Pair             # subjectAltName localhost, 127.0.0.1
    client: Pair
    rogue: Pair
    directory: Path


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])}: {done.stderr.strip()[-300:]}")


def make_ca(directory: Path, name: str) -> Pair:
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", "1", "-subj", f"/CN={name}", "-keyout", str(pair.key),
             "-out", str(pair.cert), "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return pair


def make_cert(directory: Path, name: str, ca: Pair, names: str | None) -> Pair:
    """A certificate for `name` signed by `ca`; `names` its subjectAltName (e.g.
    'DNS:localhost,IP:127.0.0.1'), None for a client certificate."""
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    request = directory / f"{name}.csr"
    extensions = directory / f"{name}.ext"
    usage = "serverAuth" if names else "clientAuth"
    extensions.write_text(f"extendedKeyUsage={usage}\n"
                          + (f"subjectAltName={names}\n" if names else ""))
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-subj", f"/CN={name}", "-keyout", str(pair.key), "-out", str(request))
    _openssl("x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key),
             "-CAcreateserial", "-days", "1", "-extfile", str(extensions),
             "-out", str(pair.cert))
    return pair


def make_pki(directory: Path) -> PKI:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (bootstrap.sh installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    ca = make_ca(directory, "ca")
    other = make_ca(directory, "other-ca")
    return PKI(ca=ca.cert, other_ca=other.cert,
               switch=make_cert(directory, "switch", ca, "DNS:localhost,IP:127.0.0.1"),
               client=make_cert(directory, "controller", ca, None),
               rogue=make_cert(directory, "rogue", other, None),
               directory=directory)
