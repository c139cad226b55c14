"""The P4Runtime v1 gRPC server of the switch (what simple_switch_grpc offers, for our runtime).

`P4RuntimeServer` is the entry point; `docs/p4runtime.md` lists what is supported.
`LocalP4Runtime` serves the same handlers in-process, without gRPC's transport (the simulator).
"""

from .inprocess import LocalChannel, LocalP4Runtime, LocalRpcError
from .p4runtime_server import P4RuntimeServer, ServerStartError
from .tls import ServerTLS, TLSConfigError

__all__ = ["LocalChannel", "LocalP4Runtime", "LocalRpcError", "P4RuntimeServer",
           "ServerStartError", "ServerTLS", "TLSConfigError"]
