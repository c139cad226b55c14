"""The switch's TLS settings, as simple_switch_grpc's `--grpc-server-*` options give them.

Why a module of its own: the files are checked once, before the server starts, so that a missing
or unreadable file, a file that is not PEM, or a key that does not belong to the certificate is
one error naming the option and the file (not a failed handshake later). Semantics follow
simple_switch_grpc: the server's certificate and key are required; without client
authentication client certificates are not asked for (`--grpc-server-cacert` is read but
unused); with it, a client must present a certificate signed by `--grpc-server-cacert`, or by a
CA in the system's store when no CA file is given (what simple_switch_grpc does: in practice no
client of a private CA gets in).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


class TLSConfigError(Exception):
    """A TLS option names a file that cannot be used; the message names the option and why."""


@dataclass(frozen=True)
class ServerTLS:
    """Paths of the PEM files; `client_auth`: require a valid client certificate (mutual TLS)."""

    cert: Path
    key: Path
    cacert: Path | None = None
    client_auth: bool = False

    def context(self) -> ssl.SSLContext:
        """A server-side context for P4Runtime (TLS 1.2+, ALPN h2 as gRPC clients require);
        raises `TLSConfigError` naming the option whose file is unusable."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["h2"])
        load_pair(context, self.cert, self.key, "--grpc-server-cert", "--grpc-server-key")
        if self.cacert is not None:
            load_ca(context, self.cacert, "--grpc-server-cacert")
        if self.client_auth:
            context.verify_mode = ssl.CERT_REQUIRED
            if self.cacert is None:
                context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        else:
            context.verify_mode = ssl.CERT_NONE
        return context


def load_ca(context: ssl.SSLContext, path: Path, option: str) -> None:
    """Trust the CA certificate(s) in `path`; `TLSConfigError` if it is unreadable or holds none."""
    _readable(option, path)
    try:
        context.load_verify_locations(cafile=str(path))
    except ssl.SSLError as error:
        raise TLSConfigError(f"{option} {path}: no PEM certificate in it "
                             f"({error.reason or error})") from None


def load_pair(context: ssl.SSLContext, cert: Path, key: Path, cert_option: str,
              key_option: str) -> None:
    """Present `cert` with its private `key`; `TLSConfigError` says which file is wrong: not
    readable, not PEM, an encrypted key (there is no way to give a passphrase, as in
    simple_switch_grpc), or a key that is not the certificate's."""
    _readable(cert_option, cert)
    _readable(key_option, key)
    try:                                  # the certificate alone first, to blame the right file
        ssl.create_default_context(cafile=str(cert))
    except ssl.SSLError as error:
        raise TLSConfigError(f"{cert_option} {cert}: no PEM certificate in it "
                             f"({error.reason or error})") from None

    def no_passphrase():
        raise TLSConfigError(f"{key_option} {key}: the key is encrypted; give an unencrypted "
                             "key (no passphrase can be entered)")
    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise TLSConfigError(f"{key_option} {key} does not match {cert_option} {cert} "
                                 "(it is not that certificate's private key)") from None
        detail = f" ({error.reason})" if error.reason else ""
        raise TLSConfigError(f"{key_option} {key}: not a PEM private key{detail}") from None


def _readable(option: str, path: Path) -> None:
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as error:
        raise TLSConfigError(f"{option} {path}: cannot read it: {error.strerror}") from None


__all__ = ["ServerTLS", "TLSConfigError"]
