"""The controller's side of P4Runtime over TLS: which CA it trusts, which certificate it shows.

Why a module: the files are checked before any connection, so that a missing or unreadable
file, a file that is not PEM, or a key that is not the certificate's is one `TLSConfigError`
naming the option and the file, instead of a connection that never becomes ready. The options
mean what p4runtime-shell's `--ssl --cacert --cert --private-key` mean: no CA file trusts the
system's store (gRPC's default roots); a client certificate is only needed when the switch runs
with `--grpc-server-with-client-auth`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from controller.errors import TLSConfigError

# The command-line spelling of each field, for messages (every inaemu command uses these).
OPTION = {"cacert": "--grpc-cacert", "cert": "--grpc-cert", "key": "--grpc-key"}


@dataclass(frozen=True)
class ClientTLS:
    """PEM files of a TLS client; `cert` and `key` go together (mutual TLS)."""

    cacert: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            given, missing = ("cert", "key") if self.key is None else ("key", "cert")
            raise TLSConfigError(f"{OPTION[given]} needs {OPTION[missing]} (a client "
                                 "certificate and its private key go together)")

    @classmethod
    def from_options(cls, ssl_on: bool, cacert: str | None, cert: str | None,
                     key: str | None) -> "ClientTLS | None":
        """The command line's `--grpc-ssl --grpc-cacert --grpc-cert --grpc-key`: TLS when any
        is given (a CA or a certificate without TLS would be a silent mistake)."""
        if not (ssl_on or cacert or cert or key):
            return None
        return cls(*(Path(value) if value else None for value in (cacert, cert, key)))

    @property
    def mutual(self) -> bool:
        return self.cert is not None

    def check(self) -> None:
        """Every file readable and what it should be; raises `TLSConfigError` otherwise."""
        self.ssl_context()

    def ssl_context(self) -> ssl.SSLContext:
        """The same trust and identity as the gRPC channel, for Python's `ssl` (the checks, and
        the diagnosis of a refused connection): certificates and host names are verified."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.set_alpn_protocols(["h2"])
        if self.cacert is None:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            _readable("cacert", self.cacert)
            try:
                context.load_verify_locations(cafile=str(self.cacert))
            except ssl.SSLError as error:
                raise TLSConfigError(f"{OPTION['cacert']} {self.cacert}: no PEM certificate "
                                     f"in it ({error.reason or error})") from None
        if self.cert is not None:
            _load_pair(context, self.cert, self.key)
        return context

    def credentials(self) -> grpc.ChannelCredentials:
        self.check()
        return grpc.ssl_channel_credentials(
            root_certificates=self.cacert.read_bytes() if self.cacert else None,
            private_key=self.key.read_bytes() if self.key else None,
            certificate_chain=self.cert.read_bytes() if self.cert else None)

    def describe(self) -> str:
        """'TLS' or 'mutual TLS', for progress lines."""
        return "mutual TLS" if self.mutual else "TLS"


def _load_pair(context: ssl.SSLContext, cert: Path, key: Path) -> None:
    """The client's certificate and key, with the same checks and messages as the switch's
    `p4switch.server.tls.load_pair` (the controller may not import the switch package:
    docs/architecture.md), under the controller's option names."""
    _readable("cert", cert)
    _readable("key", key)
    try:                                   # the certificate alone first, to blame the right file
        ssl.create_default_context(cafile=str(cert))
    except ssl.SSLError as error:
        raise TLSConfigError(f"{OPTION['cert']} {cert}: no PEM certificate in it "
                             f"({error.reason or error})") from None

    def no_passphrase():
        raise TLSConfigError(f"{OPTION['key']} {key}: the key is encrypted; give an "
                             "unencrypted key (no passphrase can be entered)")
    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise TLSConfigError(f"{OPTION['key']} {key} does not match {OPTION['cert']} "
                                 f"{cert} (it is not that certificate's private key)") from None
        detail = f" ({error.reason})" if error.reason else ""
        raise TLSConfigError(f"{OPTION['key']} {key}: not a PEM private key{detail}") from None


def _readable(field: str, path: Path) -> None:
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as error:
        raise TLSConfigError(f"{OPTION[field]} {path}: cannot read it: {error.strerror}") \
            from None


__all__ = ["ClientTLS", "OPTION"]
