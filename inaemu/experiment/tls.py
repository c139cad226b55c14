"""A run's P4Runtime over TLS: one CA, the switches' certificate, and optionally the
controller's (then mutual TLS: the switches refuse any client without a certificate of the CA).

Why one object for both sides: `inaemu run` starts the switches and is their controller, so it
hands the switches their files (`SwitchTLS`) and the controller its own (`ClientTLS`). Every
file is checked when the run is configured, so a bad one stops the run before any network is
built, with the option and the file named. Paths are made absolute: switch processes may run
elsewhere (another working directory, another server of a cluster); they are strings, so
that the run's config.json records them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.errors import TLSConfigError
from controller.tls import ClientTLS
from p4switch.server.tls import ServerTLS
from p4switch.server.tls import TLSConfigError as ServerTLSConfigError

OPTIONS = ("--grpc-cacert", "--grpc-server-cert", "--grpc-server-key", "--grpc-cert",
           "--grpc-key")


class RunTLSError(ValueError):
    """The run's TLS options do not fit together or name an unusable file."""


@dataclass(frozen=True)
class RunTLS:
    cacert: str
    switch_cert: str
    switch_key: str
    client_cert: str | None = None
    client_key: str | None = None

    @classmethod
    def from_options(cls, cacert: str | None, switch_cert: str | None, switch_key: str | None,
                     client_cert: str | None = None,
                     client_key: str | None = None) -> "RunTLS | None":
        """None when no option is given; `RunTLSError` for a partial or unusable set."""
        values = (cacert, switch_cert, switch_key, client_cert, client_key)
        if not any(values):
            return None
        for option, value in zip(OPTIONS[:3], values[:3]):
            if not value:
                raise RunTLSError(f"TLS: {option} is needed too (TLS needs the CA, the "
                                  "switches' certificate and its key; docs/p4runtime.md)")
        if bool(client_cert) != bool(client_key):
            raise RunTLSError("TLS: --grpc-cert and --grpc-key go together (the controller's "
                              "certificate and its key, for mutual TLS)")
        tls = cls(*(str(Path(v).absolute()) if v else None for v in values))
        tls.check()
        return tls

    @property
    def mutual(self) -> bool:
        return self.client_cert is not None

    def check(self) -> None:
        try:
            ServerTLS(cert=Path(self.switch_cert), key=Path(self.switch_key),
                      cacert=Path(self.cacert), client_auth=self.mutual).context()
            self.client().check()
        except (ServerTLSConfigError, TLSConfigError) as error:
            raise RunTLSError(f"TLS: {error}") from None

    def switch(self):
        """What each switch is started with (a `topologies.mininet_switch.SwitchTLS`, imported
        here: it imports Mininet): mutual TLS when the controller has a certificate."""
        from topologies.mininet_switch import SwitchTLS
        return SwitchTLS(cert=Path(self.switch_cert), key=Path(self.switch_key),
                         cacert=Path(self.cacert) if self.mutual else None)

    def client(self) -> ClientTLS:
        return ClientTLS.from_options(True, self.cacert, self.client_cert, self.client_key)

    def describe(self) -> str:
        return "mutual TLS" if self.mutual else "TLS"


__all__ = ["OPTIONS", "RunTLS", "RunTLSError"]
