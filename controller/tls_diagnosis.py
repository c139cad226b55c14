"""Why a P4Runtime connection failed, when TLS is the reason, in words a user can act on.

Why: gRPC reports every TLS mismatch as UNAVAILABLE ("Socket closed", "Tls handshake failed
(TSI_PROTOCOL_FAILURE)...") or only as a channel that never becomes ready. When a channel
fails, `explain` repeats the connection once with Python's `ssl` and the same files, and reads
the outcome: a plaintext client at a TLS switch, a TLS client at a plaintext switch, a switch
certificate the CA does not sign or that does not name the address, a switch that wants a client
certificate or refuses the one given. It returns None when TLS is not the problem (nothing
listens, the switch is still starting: the caller keeps waiting).
"""

from __future__ import annotations

import socket
import ssl

from controller.tls import OPTION, ClientTLS

PROBE_TIMEOUT_S = 3.0
# An HTTP/2 client preface and an empty SETTINGS frame: after the handshake, what makes a
# switch that accepted us answer (its SETTINGS) and one that refuses our certificate say so.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_NOT_TLS = ("WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE",
            "PACKET_LENGTH_TOO_LONG", "UNEXPECTED_EOF_WHILE_READING")


def explain(address: str, tls: ClientTLS | None, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """A sentence saying what TLS problem keeps this client out of the switch at `address`, or
    None if the probe finds none."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        raw = socket.create_connection((host, int(port)), timeout=timeout)
    except (OSError, ValueError):
        return None                                # nothing listens: not a TLS question
    with raw:
        return _plaintext_client(raw, host, address, timeout) if tls is None \
            else _tls_client(raw, host, address, tls, timeout)


def _plaintext_client(raw: socket.socket, host: str, address: str, timeout: float) -> str | None:
    """Does the switch speak TLS? A handshake that verifies nothing tells."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with context.wrap_socket(raw, server_hostname=host or None) as tls:
            tls.settimeout(timeout)
    except (OSError, ValueError):
        return None
    return (f"the switch at {address} serves P4Runtime over TLS (started with "
            f"--grpc-server-ssl) and this client connected without it: give the CA that "
            f"signed the switch's certificate with {OPTION['cacert']} (and, if the switch "
            f"requires client authentication, {OPTION['cert']} and {OPTION['key']})")


def _tls_client(raw: socket.socket, host: str, address: str, tls: ClientTLS,
                timeout: float) -> str | None:
    context = tls.ssl_context()
    raw.settimeout(timeout)
    trust = (f"the CA of {OPTION['cacert']} {tls.cacert}" if tls.cacert
             else "the system's CA store (no --grpc-cacert given)")
    try:
        conn = context.wrap_socket(raw, server_hostname=host)
    except ssl.SSLCertVerificationError as error:
        message = error.verify_message or error.reason or str(error)
        if "mismatch" in message.lower() or "hostname" in message.lower():
            return (f"the switch at {address} shows a certificate that does not name {host} "
                    f"({message}); its certificate needs {host} among its subject "
                    "alternative names")
        return (f"the switch at {address} shows a certificate that {trust} does not sign "
                f"({message})")
    except ssl.SSLError as error:
        if (error.reason or "") in _NOT_TLS:
            return _not_tls(address)
        return f"the TLS handshake with {address} failed: {error.reason or error}"
    except (ConnectionError, socket.timeout, OSError):
        return _not_tls(address)
    with conn:
        try:
            conn.sendall(_HTTP2_HELLO)
            answer = conn.recv(64)
        except ssl.SSLError as error:
            return _refused_after_handshake(address, tls, error.reason or str(error))
        except socket.timeout:
            return None
        except OSError:
            answer = b""
        if answer:
            return None                            # accepted: TLS is not the problem
        return _refused_after_handshake(address, tls, None)


def _not_tls(address: str) -> str:
    return (f"the switch at {address} does not speak TLS (started without --grpc-server-ssl?) "
            "and this client asked for TLS")


def _refused_after_handshake(address: str, tls: ClientTLS, alert: str | None) -> str:
    """TLS 1.3: the switch judges the client's certificate after the client's handshake."""
    if not tls.mutual:
        return (f"the switch at {address} requires a client certificate (it runs with "
                f"--grpc-server-with-client-auth): give {OPTION['cert']} and {OPTION['key']}")
    said = f" (TLS alert: {_alert_words(alert)})" if alert else ""
    return (f"the switch at {address} refused this client's certificate {tls.cert}{said}: it "
            "is not signed by the CA the switch trusts (its --grpc-server-cacert)")


def _alert_words(reason: str) -> str:
    return reason.split("ALERT_", 1)[-1].lower().replace("_", " ")


__all__ = ["explain"]
