"""`P4RuntimeServer`: the gRPC server the port driver starts next to the switch runtime."""

from __future__ import annotations

import shutil
import tempfile
from concurrent import futures
from pathlib import Path
from typing import Callable

import grpc
from p4.v1 import p4runtime_pb2_grpc

from .device import P4RuntimeDevice
from .service import P4RuntimeServicer
from .tls import ServerTLS, TLSConfigError
from .tls_front import FrontStartError, TLSFront

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
    """The server could not bind its address, or its TLS files are unusable."""


class P4RuntimeServer:
    """A P4Runtime v1 server for one switch, a drop-in for simple_switch_grpc's.

    `packet_out` receives the bytes of each PacketOut (controller header + payload) to inject
    on the CPU port; the driver calls `packet_in(bytes)` for every packet the pipeline sends to
    the CPU port. `cpu_port` is informational (the driver owns the port mapping).
    With `tls` (simple_switch_grpc's `--grpc-server-ssl` and its files), clients must speak TLS
    (and, with `tls.client_auth`, present a certificate of its CA): the address is served by a
    `TLSFront` that logs every refused client, and gRPC listens on a private Unix socket.
    """

    def __init__(
        self,
        switch,
        *,
        device_id: int,
        cpu_port: int | None,
        address: str,
        packet_out: Callable[[bytes], None],
        tls: ServerTLS | None = None,
    ) -> None:
        self.device = P4RuntimeDevice(switch, device_id=device_id, packet_out=packet_out)
        self.cpu_port = cpu_port
        self.address = address
        self.tls = tls
        self.bound_port: int | None = None
        self._server: grpc.Server | None = None
        self._front: TLSFront | None = None
        self._refused_before = 0
        self._private_dir: Path | None = None

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
        if self.tls is not None:
            self._start_behind_tls(server)
            return
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

    def _start_behind_tls(self, server: grpc.Server) -> None:
        try:
            context = self.tls.context()
        except TLSConfigError as error:
            raise ServerStartError(str(error)) from None
        self._private_dir = Path(tempfile.mkdtemp(prefix="inaemu-p4rt-"))    # mode 0700
        backend = str(self._private_dir / "p4runtime.sock")
        try:
            if not server.add_insecure_port(f"unix:{backend}"):
                raise ServerStartError(f"cannot listen on the private socket {backend}")
            server.start()
            self._server = server
            self._front = TLSFront(self.address, backend, context)
            self.bound_port = self._front.start()
        except (FrontStartError, RuntimeError) as error:
            self.stop()
            raise ServerStartError(str(error)) from None
        except BaseException:
            self.stop()
            raise

    def stop(self, grace: float | None = None) -> None:
        """No new client, then gRPC's own stop (in-flight RPCs get `grace` seconds), then the
        TLS connections still open."""
        if self._front is not None:
            self._front.close_listeners()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        if self._front is not None:
            self._front.stop()
            self._refused_before += self._front.refused
            self._front = None
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None

    @property
    def tls_refused(self) -> int:
        """Connections refused at the TLS handshake (each was logged with its peer and why)."""
        return self._refused_before + (self._front.refused if self._front is not None else 0)

    def packet_in(self, data: bytes) -> None:
        self.device.packet_in(data)

    @property
    def packets_in_dropped(self) -> int:
        """CPU-port packets not delivered: no primary, primary lagging, or shorter than the
        packet_in header."""
        return self.device.packets_in_dropped
