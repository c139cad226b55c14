"""The P4Runtime v1 gRPC server of the switch (what simple_switch_grpc offers, for our runtime).

`P4RuntimeServer` is the entry point; `docs/p4runtime.md` lists what is supported.
"""

from .p4runtime_server import P4RuntimeServer, ServerStartError

__all__ = ["P4RuntimeServer", "ServerStartError"]
