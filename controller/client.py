"""One P4Runtime session with one switch, on top of p4runtime-shell's `P4RuntimeClient`.

Why a wrapper: the shell's client exits the process when the arbitration fails and reports errors
through logging; a library must raise instead. `SwitchClient` keeps the shell's channel, stream and
arbitration handling, and adds: a connect timeout with a clear `ConnectionFailed`, domain errors
(`P4RuntimeError`) that list each failed update, and typed helpers for the operations the
controller needs (pipeline push, batched writes, multicast groups, counter/register/table reads).
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Iterable, Sequence

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from p4runtime_sh.p4runtime import P4RuntimeClient, SSLOptions

from controller import entities
from controller.errors import ConnectionFailed, ControllerError, P4InfoError, P4RuntimeError
from controller.p4info import P4InfoIndex
from controller.tls import ClientTLS
from controller.tls_diagnosis import explain

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
MAX_BATCH = 500  # updates per Write request
DIAGNOSE_EVERY_S = 1.0   # while a channel fails, how often to ask whether TLS is the reason
# stream message kinds, each with its own queue (as in the shell); anything else goes to "unknown"
STREAM_KINDS = ("arbitration", "packet", "digest", "idle_timeout_notification", "unknown")


class _Session(P4RuntimeClient):
    """The shell's client (channel, queues, `get_stream_packet`), made to raise instead of
    calling sys.exit and logging, with a daemon receive thread so a lost server never blocks exit."""

    def __init__(self, device_id: int, address: str, election_id: tuple[int, int], timeout: float,
                 channel=None, tls: ClientTLS | None = None):
        self._timeout = timeout
        self._address = address
        self._tls = tls
        self._over_network = channel is None
        self._ending = False
        self.is_primary = False
        try:
            if channel is None and tls is None:
                super().__init__(device_id, address, election_id)
            else:       # what the shell's constructor does, over a channel given to it
                if channel is None:
                    channel = grpc.secure_channel(address, tls.credentials())
                self.device_id, self.election_id, self.role_name = device_id, election_id, None
                self.ssl_options = (SSLOptions(True) if tls is None else
                                    SSLOptions(False, *(str(f) if f else None for f in
                                                        (tls.cacert, tls.cert, tls.key))))
                self.channel = channel
                self.stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
                self.set_up_stream()
        except BaseException:
            self.close()  # the stream thread may already be running
            raise

    def set_up_stream(self):
        """The shell's stream, minus its logging: a stream error is kept for the error message."""
        self._wait_ready()
        self.stream_out_q = queue.Queue()
        self.stream_in_q = {kind: queue.Queue() for kind in STREAM_KINDS}
        self.stream_error: str | None = None

        def requests():
            while (message := self.stream_out_q.get()) is not None:
                yield message

        self.stream = self.stub.StreamChannel(requests())
        self.stream_recv_thread = threading.Thread(target=self._receive, daemon=True,
                                                   name=f"p4rt-stream-{self._address}")
        self.stream_recv_thread.start()
        self.handshake()

    def _wait_ready(self) -> None:
        """Until the channel is ready or the timeout; over the network, each time it fails
        (at most every DIAGNOSE_EVERY_S) ask whether TLS is why, and stop at once if so."""
        ready = grpc.channel_ready_future(self.channel)
        failed = threading.Event()

        def watch(state) -> None:
            if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                failed.set()
        if self._over_network:
            self.channel.subscribe(watch)
        deadline = time.monotonic() + self._timeout
        next_check = 0.0
        try:
            while True:
                left = deadline - time.monotonic()
                try:
                    ready.result(timeout=max(0.0, min(left, 0.2)))
                    return
                except grpc.FutureTimeoutError:
                    pass
                if failed.is_set() and time.monotonic() >= next_check:
                    failed.clear()
                    next_check = time.monotonic() + DIAGNOSE_EVERY_S
                    why = explain(self._address, self._tls)
                    if why is not None:
                        ready.cancel()
                        self.channel.close()
                        raise ConnectionFailed(f"cannot connect to {self._address}: {why}")
                if left <= 0:
                    ready.cancel()
                    self.channel.close()
                    raise ConnectionFailed(f"no P4Runtime server answers at {self._address} "
                                           f"(waited {self._timeout:g} s)")
        finally:
            if self._over_network:
                self.channel.unsubscribe(watch)

    def _receive(self) -> None:
        """Sort stream messages into the shell's per-kind queues until the stream ends."""
        try:
            for message in self.stream:
                kind = message.WhichOneof("update")
                self.stream_in_q.get(kind, self.stream_in_q["unknown"]).put(message)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                self.stream_error = f"{error.code().name}: {error.details()}"
        finally:
            for waiting in self.stream_in_q.values():
                waiting.put(None)

    def handshake(self):
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high = self.election_id[0]
        request.arbitration.election_id.low = self.election_id[1]
        self.stream_out_q.put(request)
        reply = self.get_stream_packet("arbitration", timeout=self._timeout)
        if reply is None:
            why = self.stream_error or "the server did not answer"
            raise ConnectionFailed(f"{self._address}: arbitration for device {self.device_id} "
                                   f"failed: {why}")
        self.is_primary = reply.arbitration.status.code == code_pb2.OK

    def end_stream(self) -> None:
        """Ask the server to end the stream (half-close); `close` waits for it."""
        if getattr(self, "stream_out_q", None) is not None and not self._ending:
            self._ending = True
            self.stream_out_q.put(None)

    def close(self) -> None:
        """End the stream politely, then cancel it if the server does not close its side."""
        self.end_stream()
        thread: threading.Thread | None = getattr(self, "stream_recv_thread", None)
        if thread is not None:
            thread.join(timeout=2)
            if thread.is_alive():
                self.stream.cancel()
                thread.join(timeout=2)
        if getattr(self, "channel", None) is not None:
            self.channel.close()


class SwitchClient:
    """A primary P4Runtime session with one switch. Use as a context manager, or call `close()`.

    `channel`: a connection to use instead of a gRPC channel to `address` (which then only
    names the switch in messages): a `p4switch.server.LocalChannel` to a switch served in this
    process (the simulator), with the same requests, replies and errors as over gRPC.
    `tls`: connect over TLS with these files (docs/p4runtime.md, "TLS"); a refusal for a TLS
    reason is a `ConnectionFailed` that says which (not a wait until the timeout)."""

    def __init__(self, name: str, address: str, device_id: int, *,
                 election_id: tuple[int, int] = (0, 1), timeout: float = 10.0,
                 p4info: P4InfoIndex | None = None, channel=None,
                 tls: ClientTLS | None = None):
        self.name = name
        self.address = address
        self.device_id = device_id
        self.index = p4info
        # this session committed the pipeline and nobody has taken that knowledge yet: every
        # register cell of it is zero (`take_fresh_pipeline`)
        self._fresh_pipeline = False
        self._session = None
        try:
            session = _Session(device_id, address, election_id, timeout, channel, tls)
        except ConnectionFailed as e:
            raise ConnectionFailed(f"{name}: {e}") from None
        self._session = session
        if not session.is_primary:
            session.close()
            raise ConnectionFailed(f"{name}: another controller holds a higher election id than "
                                   f"{election_id}; refusing to run as a backup")

    # -- lifecycle ----------------------------------------------------------------------------------

    def end_stream(self) -> None:
        """Start closing (the server ends the stream meanwhile): a fabric closes every session
        at once this way, then waits for each (`close`)."""
        if self._session is not None:
            self._session.end_stream()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> "SwitchClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live(self) -> _Session:
        if self._session is None:
            raise ControllerError(f"{self.name}: the session is closed")
        return self._session

    def _stub(self):
        return self._live().stub

    def _call(self, rpc: str, request, labels: tuple[str, ...] = ()):
        try:
            return getattr(self._stub(), rpc)(request)
        except grpc.RpcError as e:
            raise P4RuntimeError.from_rpc_error(self.name, rpc, e, labels) from None

    def _stamp(self, request) -> None:
        session = self._live()
        request.device_id = self.device_id
        request.election_id.high = session.election_id[0]
        request.election_id.low = session.election_id[1]

    def _require_index(self) -> P4InfoIndex:
        if self.index is None:
            raise P4InfoError(f"{self.name}: no P4Info known; push a pipeline or fetch_p4info() first")
        return self.index

    # -- pipeline -----------------------------------------------------------------------------------

    def set_pipeline(self, p4info: P4InfoIndex, device_config: bytes) -> None:
        """Install a program: the P4Info and the target's config (BMv2 JSON bytes), VERIFY_AND_COMMIT."""
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self._stamp(request)
        request.config.p4info.CopyFrom(p4info.p4info)
        request.config.p4_device_config = device_config
        self._fresh_pipeline = False
        self._call("SetForwardingPipelineConfig", request)
        self.index = p4info
        self._fresh_pipeline = True

    def take_fresh_pipeline(self) -> bool:
        """Whether this session committed the running pipeline (so every register cell is
        still zero but for what the data plane wrote since), and forget it: one reader (an
        InaSwitches' view of the switch) owns that knowledge and tracks the cells its jobs
        use; a later reader cannot know what ran in between and gets False."""
        fresh, self._fresh_pipeline = self._fresh_pipeline, False
        return fresh

    def set_pipeline_files(self, p4info_path: str | Path, json_path: str | Path) -> None:
        index = P4InfoIndex.from_file(p4info_path)
        try:
            config = Path(json_path).read_bytes()
        except OSError as e:
            raise ControllerError(f"{json_path}: cannot read: {e.strerror}") from None
        self.set_pipeline(index, config)

    def fetch_p4info(self) -> P4InfoIndex:
        """Adopt the P4Info the switch is running (for a controller that did not push it)."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        reply = self._call("GetForwardingPipelineConfig", request)
        if not reply.config.HasField("p4info"):
            raise P4InfoError(f"{self.name}: the switch has no pipeline yet")
        self.index = P4InfoIndex(reply.config.p4info)
        return self.index

    # -- writes -------------------------------------------------------------------------------------

    def write(self, updates: Sequence[tuple[int, p4runtime_pb2.Entity | p4runtime_pb2.TableEntry]],
              labels: Sequence[str] = ()) -> None:
        """Send updates (type, Entity or a bare TableEntry) in batches of MAX_BATCH; a failure
        names each failed update (and its label)."""
        for start in range(0, len(updates), MAX_BATCH):
            request = p4runtime_pb2.WriteRequest()
            self._stamp(request)
            for kind, entity in updates[start:start + MAX_BATCH]:
                update = request.updates.add(type=kind)
                if isinstance(entity, p4runtime_pb2.TableEntry):
                    update.entity.table_entry.CopyFrom(entity)
                else:
                    update.entity.CopyFrom(entity)
            self._call("Write", request, tuple(labels[start:start + MAX_BATCH]))

    def insert_table_entries(self, entries: Iterable[p4runtime_pb2.TableEntry],
                             labels: Sequence[str] = ()) -> int:
        updates = [(INSERT, e) for e in entries]     # written as Entities holding them
        self.write(updates, labels)
        return len(updates)

    def add_entry(self, table: str, match: dict, action: str, params: dict | None = None,
                  priority: int | None = None) -> None:
        """Insert one table entry, by names."""
        entry = entities.table_entry(self._require_index(), table, match, action, params, priority)
        self.insert_table_entries([entry], [f"{table} {match}"])

    def set_default(self, table: str, action: str, params: dict | None = None) -> None:
        entry = entities.default_entry(self._require_index(), table, action, params)
        self.write([(MODIFY, p4runtime_pb2.Entity(table_entry=entry))])

    def set_multicast_group(self, group_id: int, replicas: Iterable[tuple[int, int]]) -> None:
        """Create the group, or replace its replicas if it already exists."""
        entity = entities.multicast_group(group_id, list(replicas))
        try:
            self.write([(INSERT, entity)], [f"multicast group {group_id}"])
        except P4RuntimeError as e:
            if e.code != "ALREADY_EXISTS" and not any(u.code == "ALREADY_EXISTS" for u in e.updates):
                raise
            self.write([(MODIFY, entity)], [f"multicast group {group_id}"])

    def write_register(self, name: str, cell: int, value) -> None:
        entity = entities.register_write(self._require_index(), name, cell, value)
        self.write([(MODIFY, entity)], [f"register {name}[{cell}]"])

    # -- reads --------------------------------------------------------------------------------------

    def read(self, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.append(entity)
        try:
            return [e for reply in self._stub().Read(request) for e in reply.entities]
        except grpc.RpcError as e:
            raise P4RuntimeError.from_rpc_error(self.name, "Read", e) from None

    def read_counter(self, name: str, cell: int | None = None) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) for one cell or all cells of an indexed counter."""
        found = self.read(entities.counter_request(self._require_index(), name, cell))
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                              e.counter_entry.data.byte_count)
                for e in found if e.HasField("counter_entry")}

    def read_register(self, name: str, cell: int | None = None) -> dict[int, int]:
        """index -> value for one cell or all cells of a register."""
        found = self.read(entities.register_request(self._require_index(), name, cell))
        return {e.register_entry.index.index: entities.bitstring_of(e.register_entry.data)
                for e in found if e.HasField("register_entry")}

    def read_table(self, table: str) -> list[entities.TableEntryView]:
        index = self._require_index()
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = index.table(table).id
        return [entities.describe_table_entry(index, e.table_entry)
                for e in self.read(entity) if e.HasField("table_entry")]

    def read_multicast_group(self, group_id: int) -> list[tuple[int, int]]:
        entity = entities.multicast_group(group_id, [])
        found = self.read(entity)
        return [(r.egress_port, r.instance) for e in found
                for r in e.packet_replication_engine_entry.multicast_group_entry.replicas]
