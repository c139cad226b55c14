"""`P4RuntimeServer`: the gRPC server the port driver starts next to the switch runtime."""

from __future__ import annotations

from concurrent import futures
from typing import Callable

import grpc
from p4.v1 import p4runtime_pb2_grpc

from .device import P4RuntimeDevice
from .service import P4RuntimeServicer

# Each open StreamChannel holds one worker thread for its lifetime, so streams are capped (see
# device.MAX_STREAMS) well below the pool size and unary RPCs always find a thread.
MAX_WORKERS = 32
# Pipeline configs (BMv2 JSON) and big reads can exceed grpc's default 4 MiB message limit.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class _Collector:
    """Takes the handlers a generated `add_..._to_server` registers (it expects a server)."""

    def __init__(self) -> None:
        self.handlers: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers) -> None:
        self.handlers.extend(handlers)

    def add_registered_method_handlers(self, service, handlers) -> None:
        self.handlers.append(grpc.method_handlers_generic_handler(service, handlers))


def rpc_handlers(servicer: P4RuntimeServicer) -> tuple[grpc.GenericRpcHandler, ...]:
    """Every P4Runtime method's handler: the generated registration's. The gRPC server and the
    in-process one (inprocess.py) serve exactly these."""
    collector = _Collector()
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, collector)
    return tuple(collector.handlers)


class ServerStartError(Exception):
    """The server could not bind its address."""


class P4RuntimeServer:
    """A P4Runtime v1 server for one switch, a drop-in for simple_switch_grpc's.

    `packet_out` receives the bytes of each PacketOut (controller header + payload) to inject
    on the CPU port; the driver calls `packet_in(bytes)` for every packet the pipeline sends to
    the CPU port. `cpu_port` is informational (the driver owns the port mapping).
    """

    def __init__(
        self,
        switch,
        *,
        device_id: int,
        cpu_port: int | None,
        address: str,
        packet_out: Callable[[bytes], None],
    ) -> None:
        self.device = P4RuntimeDevice(switch, device_id=device_id, packet_out=packet_out)
        self.cpu_port = cpu_port
        self.address = address
        self.bound_port: int | None = None
        self._server: grpc.Server | None = None

    def start(self) -> None:
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="p4rt"),
            options=[
                # grpc sets SO_REUSEPORT by default: two switches given the same port would
                # then share it silently, each getting some of the clients.
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        server.add_generic_rpc_handlers(rpc_handlers(P4RuntimeServicer(self.device)))
        try:
            port = server.add_insecure_port(self.address)
        except RuntimeError as exc:
            message = f"cannot bind P4Runtime server to {self.address}: {exc}"
            raise ServerStartError(message) from None
        if not port:
            raise ServerStartError(f"cannot bind P4Runtime server to {self.address}")
        server.start()
        self._server = server
        self.bound_port = port

    def stop(self, grace: float | None = None) -> None:
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None

    def packet_in(self, data: bytes) -> None:
        self.device.packet_in(data)

    @property
    def packets_in_dropped(self) -> int:
        """CPU-port packets not delivered: no primary, primary lagging, or shorter than the
        packet_in header."""
        return self.device.packets_in_dropped
