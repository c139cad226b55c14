"""A run's P4Runtime over TLS: one CA, the switches' certificate, and optionally the
controller's (then mutual TLS: the switches refuse any client without a certificate of the CA).

Why one object for both sides: `inaemu run` starts the switches and is their controller, so it
hands the switches their files (`SwitchTLS`) and the controller its own (`ClientTLS`). Every
file is checked when the run is configured, so a bad one stops the run before any network is
built, with the option and the file named. Paths are made absolute: switch processes may run
elsewhere (another working directory, another server of a cluster); they are strings, so
that the run's config.json records them.

Every command that builds a Mininet network and is its controller (`inaemu run`, `compare`,
`train`, `scenario`, scripts/contention.py) takes the same five options: `add_tls_arguments`
declares them, `tls_from_args` reads them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:          # imported where used: the options parse without gRPC or the server
    from controller.tls import ClientTLS

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
        from controller.errors import TLSConfigError
        from p4switch.server.tls import ServerTLS
        from p4switch.server.tls import TLSConfigError as ServerTLSConfigError
        try:                 # the client's side first: it names the CA's file --grpc-cacert
            self.client().check()
            ServerTLS(cert=Path(self.switch_cert), key=Path(self.switch_key),
                      cacert=Path(self.cacert), client_auth=self.mutual).context()
        except (ServerTLSConfigError, TLSConfigError) as error:
            raise RunTLSError(f"TLS: {error}") from None

    def switch(self):
        """What each switch is started with (a `topologies.mininet_switch.SwitchTLS`, imported
        here: it imports Mininet): mutual TLS when the controller has a certificate."""
        from topologies.mininet_switch import SwitchTLS
        return SwitchTLS(cert=Path(self.switch_cert), key=Path(self.switch_key),
                         cacert=Path(self.cacert) if self.mutual else None)

    def client(self) -> "ClientTLS":
        from controller.tls import ClientTLS
        return ClientTLS.from_options(True, self.cacert, self.client_cert, self.client_key)

    def describe(self) -> str:
        return "mutual TLS" if self.mutual else "TLS"


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """The five options, as one group of `parser`'s help."""
    group = parser.add_argument_group(
        "P4Runtime over TLS (Mininet; mutual TLS with --grpc-cert/--grpc-key; docs/p4runtime.md)")
    group.add_argument("--grpc-cacert", metavar="PEM",
                       help="the CA that signed the switches' (and the controller's) "
                            "certificates")
    group.add_argument("--grpc-server-cert", metavar="PEM",
                       help="the switches' certificate (names 127.0.0.1, and with --servers "
                            "every server's address)")
    group.add_argument("--grpc-server-key", metavar="PEM", help="its private key")
    group.add_argument("--grpc-cert", metavar="PEM",
                       help="the controller's certificate: the switches then require one "
                            "(--grpc-server-with-client-auth)")
    group.add_argument("--grpc-key", metavar="PEM", help="its private key")


def tls_from_args(args: argparse.Namespace, net: str | None = None) -> RunTLS | None:
    """The options `add_tls_arguments` declared, checked (`RunTLS.from_options`); None when none
    is given. With `net` (the command's --net) TLS is refused unless it is mininet: only
    Mininet's switches are processes serving P4Runtime over the network."""
    tls = RunTLS.from_options(args.grpc_cacert, args.grpc_server_cert, args.grpc_server_key,
                              args.grpc_cert, args.grpc_key)
    if tls is not None and net is not None and net != "mininet":
        raise RunTLSError(f"TLS: {', '.join(given(args))} need --net mininet (the simulator's "
                          "switches are served inside its own process, with no network to "
                          "secure)")
    return tls


def given(args: argparse.Namespace) -> list[str]:
    """The TLS options set on the command line, in `OPTIONS` order."""
    return [option for option in OPTIONS
            if getattr(args, option.removeprefix("--").replace("-", "_"), None)]


__all__ = ["OPTIONS", "RunTLS", "RunTLSError", "add_tls_arguments", "given", "tls_from_args"]
