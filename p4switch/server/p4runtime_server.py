"""`P4RuntimeServer`: the gRPC server the port driver starts next to the switch runtime.

Why gRPC's asyncio server (on a thread of its own) with the servicer's plain functions run in a
thread pool: the synchronous server gives each call a pool thread from the moment it arrives,
so a client that opens calls and never sends their request (a stuck or hostile client) held
every thread after 32 such calls and the switch answered nobody (simple_switch_grpc answers
on). Here a call waits for its request on the event loop, at no thread's cost, and takes a
thread only to run; `max_calls` bounds the calls open at once, past which new ones are
RESOURCE_EXHAUSTED at once, never queued.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from concurrent import futures
from pathlib import Path
from typing import Callable

import grpc
from p4.v1 import p4runtime_pb2_grpc

from .device import P4RuntimeDevice
from .request_decoding import DecodingGuard
from .service import P4RuntimeServicer
from .tls import ServerTLS, TLSConfigError
from .tls_front import FrontStartError, TLSFront

# Each open StreamChannel holds one worker thread for its lifetime, so streams are capped (see
# device.MAX_STREAMS) well below the pool size and unary RPCs always find a thread.
MAX_WORKERS = 32
# Pool threads started with the server: a typical switch's most calls at once (a controller's
# stream, its writes, a reader of counters) never need more, so the pool does not grow later.
WARM_WORKERS = 4
# Calls open at once (waiting for their request, running, or streaming); more: RESOURCE_EXHAUSTED.
MAX_CALLS = 1000
# Pipeline configs (BMv2 JSON) and big reads can exceed grpc's default 4 MiB message limit;
# simple_switch_grpc's limit is the same: a larger request is RESOURCE_EXHAUSTED.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
STOP_TIMEOUT_S = 10.0


class _Collector:
    """Takes the handlers a generated `add_..._to_server` registers (it expects a server)."""

    def __init__(self) -> None:
        self.handlers: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers) -> None:
        self.handlers.extend(handlers)

    def add_registered_method_handlers(self, service, handlers) -> None:
        self.handlers.append(grpc.method_handlers_generic_handler(service, handlers))


def start_threads(pool: futures.ThreadPoolExecutor, count: int) -> None:
    """Start `count` of the pool's threads now. A ThreadPoolExecutor adds a thread only when a
    call finds none idle and never removes one, so its size would creep up to the most calls
    ever open at once, long after start (a soak read that as the switch's threads growing).
    `count` tasks that wait for one another each need a thread of their own."""
    barrier = threading.Barrier(count)

    def meet() -> None:
        try:
            barrier.wait(timeout=5.0)
        except threading.BrokenBarrierError:
            pass                 # a pool smaller than count: the threads it has are started

    futures.wait([pool.submit(meet) for _ in range(count)])


def rpc_handlers(servicer: P4RuntimeServicer) -> tuple[grpc.GenericRpcHandler, ...]:
    """Every P4Runtime method's handler: the generated registration's. The gRPC server and the
    in-process one (inprocess.py) serve exactly these."""
    collector = _Collector()
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, collector)
    return tuple(collector.handlers)


def _quiet_cancellations(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """Futures cancelled at stop are not errors worth a traceback; anything else is."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


async def _cancel_tasks(settle_s: float = 2.0) -> None:
    """Whatever grpc.aio left running on the loop after its stop (calls' tasks, the bridges of
    threads reading a stream), cancelled until none is left for a few rounds (a cancelled
    bridge's thread may ask for one more message), at most `settle_s`."""
    deadline = asyncio.get_running_loop().time() + settle_s
    quiet = 0
    while quiet < 3 and asyncio.get_running_loop().time() < deadline:
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.01)
        quiet = quiet + 1 if not tasks else 0


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
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        max_calls: int = MAX_CALLS,
    ) -> None:
        self.device = P4RuntimeDevice(switch, device_id=device_id, packet_out=packet_out)
        self.cpu_port = cpu_port
        self.address = address
        self.tls = tls
        self.max_message_bytes = max_message_bytes
        self.max_calls = max_calls
        self.bound_port: int | None = None
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._pool: futures.ThreadPoolExecutor | None = None
        self._front: TLSFront | None = None
        self._refused_before = 0
        self._private_dir: Path | None = None

    def start(self) -> None:
        context = None
        if self.tls is not None:
            try:
                context = self.tls.context()
            except TLSConfigError as error:
                raise ServerStartError(str(error)) from None
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_cancellations)
        self._loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                             name="p4rt-grpc")
        self._loop_thread.start()
        self._pool = futures.ThreadPoolExecutor(max_workers=MAX_WORKERS,
                                                thread_name_prefix="p4rt")
        start_threads(self._pool, WARM_WORKERS)
        try:
            if context is None:
                self.bound_port = self._on_loop(self._serve(self.address))
                return
            self._private_dir = Path(tempfile.mkdtemp(prefix="inaemu-p4rt-"))    # mode 0700
            backend = str(self._private_dir / "p4runtime.sock")
            self._on_loop(self._serve(f"unix:{backend}"))
            self._front = TLSFront(self.address, backend, context)
            self.bound_port = self._front.start()
        except FrontStartError as error:
            self.stop()
            raise ServerStartError(str(error)) from None
        except BaseException:
            self.stop()
            raise

    def _on_loop(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _serve(self, address: str) -> int:
        """The gRPC server on `address` (created on the loop, as grpc.aio requires); its port."""
        self._servicer = P4RuntimeServicer(self.device)
        server = grpc.aio.server(
            migration_thread_pool=self._pool,
            handlers=(DecodingGuard(rpc_handlers(self._servicer)),),
            maximum_concurrent_rpcs=self.max_calls,
            options=[
                # grpc sets SO_REUSEPORT by default: two switches given the same port would
                # then share it silently, each getting some of the clients.
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", self.max_message_bytes),
                ("grpc.max_send_message_length", self.max_message_bytes),
            ],
        )
        try:
            port = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise ServerStartError(f"cannot bind P4Runtime server to {self.address}: "
                                   f"{exc}") from None
        if not port and not address.startswith("unix:"):
            raise ServerStartError(f"cannot bind P4Runtime server to {self.address}")
        await server.start()
        self._server = server
        return port

    def stop(self, grace: float | None = None) -> None:
        """No new client, then gRPC's own stop (in-flight RPCs get `grace` seconds), then the
        TLS connections still open."""
        self.device.close()
        if self._front is not None:
            self._front.close_listeners()
        if self._server is not None:
            server, self._server = self._server, None
            asyncio.run_coroutine_threadsafe(server.stop(grace), self._loop).result(
                STOP_TIMEOUT_S + (grace or 0))
            self._servicer.end_streams()      # their threads, blocked on their outboxes
            # calls' tasks grpc.aio leaves behind: else pool threads stay blocked on them
            asyncio.run_coroutine_threadsafe(_cancel_tasks(), self._loop).result(STOP_TIMEOUT_S)
        if self._loop is not None:
            loop, self._loop = self._loop, None
            loop.call_soon_threadsafe(loop.stop)
            self._loop_thread.join(STOP_TIMEOUT_S)
            if not self._loop_thread.is_alive():
                loop.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
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
