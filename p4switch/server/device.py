"""The P4Runtime device: request semantics without gRPC.

`P4RuntimeDevice` implements what each RPC means (arbitration on stream channels, pipeline
configs, batched writes with per-update errors, wildcard reads, packet I/O) in terms of protobuf
messages and `RequestError`s; `service.py` only adapts it to grpc.

Locking: `_control` serialises control-plane requests and guards the pipeline/device state; the
switch's own lock is taken inside it around runtime calls. `_streams` guards arbitration and the
stream senders and is a leaf lock (nothing else is acquired while holding it), so `packet_in`,
which the port driver may call while it holds the switch lock, can never deadlock with a Write.
"""

from __future__ import annotations

import logging
import threading
import time
from importlib import metadata
from typing import Callable, Hashable

from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4switch.deadlines import DeadlineThread
from p4switch.runtime import P4SwitchError

from . import entities, table_entries
from .arbitration import Arbitration, Notification
from .device_state import DeviceState
from .errors import (
    FAILED_PRECONDITION,
    INTERNAL,
    INVALID_ARGUMENT,
    NOT_FOUND,
    PERMISSION_DENIED,
    RESOURCE_EXHAUSTED,
    UNIMPLEMENTED,
    RequestError,
)
from .idle_timeout import IdleSweeper
from .packet_io import packet_in_message, packet_out_bytes
from .pipeline import Pipeline, verified

log = logging.getLogger(__name__)

# Concurrent StreamChannels (clients); each holds a server thread. More: RESOURCE_EXHAUSTED.
MAX_STREAMS = 16
# Updates in one Write. The gRPC message limit (256 MiB) alone lets ~8 million small updates
# through: minutes under the control lock and a per-update error list of gigabytes. More:
# RESOURCE_EXHAUSTED, nothing applied (simple_switch_grpc took 100,000 in 2.7 s; so does this).
MAX_WRITE_UPDATES = 1_000_000

SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetRequest = p4runtime_pb2.GetForwardingPipelineConfigRequest
# Queues a message on a stream; False if a packet-in was refused because the client lags.
Sender = Callable[[p4runtime_pb2.StreamMessageResponse], bool]


def api_version() -> str:
    try:
        return metadata.version("p4runtime")
    except metadata.PackageNotFoundError:
        return "1.6.0"


def election_id_of(message) -> int | None:
    if not message.HasField("election_id"):
        return None
    return (message.election_id.high << 64) | message.election_id.low


class P4RuntimeDevice:
    """One switch as a P4Runtime device (`device_id`)."""

    def __init__(self, switch, *, device_id: int, packet_out: Callable[[bytes], None]) -> None:
        self.switch = switch
        self.device_id = device_id
        self._packet_out = packet_out
        self._control = threading.RLock()
        self._streams = threading.Lock()
        self._arbitration = Arbitration(device_id)
        self._senders: dict[Hashable, Sender] = {}
        self._state: DeviceState | None = None
        self._saved: Pipeline | None = None  # VERIFY_AND_SAVE'd, not yet committed
        self.packets_in_dropped = 0
        self.idle_notifications_dropped = 0      # no primary client to report to
        self.digest_lists_dropped = 0            # no primary client to send them to
        self._idle = IdleSweeper(self.sweep_idle_timeouts)
        self._digest_timer = DeadlineThread(self.send_due_digests, "p4rt-digests")
        switch.learn_handler = self._learned

    # -- common checks ---------------------------------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise RequestError(
                NOT_FOUND, f"no device {device_id} (this is device {self.device_id})"
            )

    def _committed(self) -> DeviceState:
        if self._state is None:
            raise RequestError(FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return self._state

    # -- Capabilities, pipeline config -------------------------------------------------------------

    def capabilities(self) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=api_version())

    def set_pipeline(self, request: SetRequest):
        """A SetForwardingPipelineConfigRequest (the config verified once per content:
        pipeline.verified)."""
        self._check_device(request.device_id)
        if request.role or request.role_id:
            raise RequestError(UNIMPLEMENTED, "only the default role is supported")
        with self._streams:
            self._arbitration.check_primary(election_id_of(request), "SetForwardingPipelineConfig")
        action = request.action
        with self._control:
            if action == SetRequest.COMMIT:
                if self._saved is None:
                    raise RequestError(FAILED_PRECONDITION, "COMMIT: no saved config to commit")
                self._commit(self._saved)
                self._saved = None
            elif action in (SetRequest.VERIFY, SetRequest.VERIFY_AND_SAVE,
                            SetRequest.VERIFY_AND_COMMIT, SetRequest.RECONCILE_AND_COMMIT):
                pipeline = verified(request.config)
                if action == SetRequest.VERIFY_AND_SAVE:
                    self._saved = pipeline
                elif action == SetRequest.VERIFY_AND_COMMIT:
                    self._commit(pipeline)
                elif action == SetRequest.RECONCILE_AND_COMMIT:
                    self._reconcile(pipeline)
            else:
                raise RequestError(INVALID_ARGUMENT, "SetForwardingPipelineConfig: no action given")
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _commit(self, pipeline: Pipeline) -> None:
        with self.switch.lock:
            try:
                self.switch.load_config(pipeline.device_json or pipeline.bmv2)
            except P4SwitchError as exc:  # anything else is a runtime bug: INTERNAL
                raise RequestError(INVALID_ARGUMENT, f"p4_device_config: {exc}") from None
            # the new pipeline's digest state replaces the old one's under the switch lock,
            # which the packet path holds when it hands over a sample
            self._state = DeviceState(switch=self.switch, pipeline=pipeline)
        if any(t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
               for t in pipeline.index.all("table")):
            self._idle.start()
        if pipeline.config.p4info.digests:
            self._digest_timer.start()

    def close(self) -> None:
        """Stop the idle-timeout sweeps and digest timeouts (the server's stop calls it)."""
        self._idle.stop()
        self._digest_timer.stop()

    # -- digests -----------------------------------------------------------------------------------

    def _learned(self, learn_list, sample: bytes) -> None:
        """The switch's learn handler: runs on the packet path with the switch lock held."""
        state = self._state
        if state is None:
            return
        message = state.digests.offer(learn_list.name, sample, time.monotonic())
        if message is not None:
            self._send_digest(message)
        else:
            self._digest_timer.wake()     # the list's timeout may be the nearest deadline

    def send_due_digests(self) -> float | None:
        """Send the digest lists whose timeout has come and expire unacknowledged ones; when
        to look again (time.monotonic()), or None."""
        with self.switch.lock:
            state = self._state
            if state is None:
                return None
            due = state.digests.due(time.monotonic())
            next_due = state.digests.next_due()
        for message in due:
            self._send_digest(message)
        return next_due

    def _send_digest(self, message: p4runtime_pb2.DigestList) -> None:
        with self._streams:
            primary = self._arbitration.primary
            send = self._senders.get(primary) if primary is not None else None
        if send is None or not send(p4runtime_pb2.StreamMessageResponse(digest=message)):
            self.digest_lists_dropped += 1

    def _digest_ack(self, client: Hashable, ack: p4runtime_pb2.DigestListAck) -> None:
        with self._streams:
            is_primary = self._arbitration.primary == client
        if not is_primary:
            return   # only the primary's lists are sent, so only it acknowledges them
        with self.switch.lock:
            state = self._state
            if state is not None:
                state.digests.ack(ack)

    def sweep_idle_timeouts(self) -> int:
        """Report the entries of ageing tables now due (idle_timeout.py) to the primary client,
        in one IdleTimeoutNotification; how many entries it holds."""
        with self._control:
            state = self._state
            if state is None:
                return 0
            notification = table_entries.idle_notification(state)
        if notification is None:
            return 0
        notification.timestamp = time.time_ns()
        with self._streams:
            primary = self._arbitration.primary
            send = self._senders.get(primary) if primary is not None else None
        if send is None or not send(
                p4runtime_pb2.StreamMessageResponse(idle_timeout_notification=notification)):
            self.idle_notifications_dropped += 1
            return 0
        return len(notification.table_entry)

    def _reconcile(self, pipeline: Pipeline) -> None:
        """Keep the forwarding state if the program is unchanged; else it cannot be kept."""
        current = self._state
        if current is None:
            self._commit(pipeline)
        elif current.pipeline.bmv2 == pipeline.bmv2 and _same_ids(current.pipeline, pipeline):
            current.pipeline = pipeline  # new cookie or P4Info annotations, same objects
        else:
            raise RequestError(
                UNIMPLEMENTED,
                "RECONCILE_AND_COMMIT with a different program (use VERIFY_AND_COMMIT)",
            )

    def get_pipeline(self, request: GetRequest):
        self._check_device(request.device_id)
        with self._control:
            config = self._committed().pipeline.config
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        kind = request.response_type
        if kind in (GetRequest.ALL, GetRequest.P4INFO_AND_COOKIE):
            response.config.p4info.CopyFrom(config.p4info)
        if kind in (GetRequest.ALL, GetRequest.DEVICE_CONFIG_AND_COOKIE):
            response.config.p4_device_config = config.p4_device_config
        if config.HasField("cookie"):
            response.config.cookie.CopyFrom(config.cookie)
        return response

    # -- Write and Read ---------------------------------------------------------------------------

    def write(self, request: p4runtime_pb2.WriteRequest) -> list[RequestError | None]:
        """Apply a batch: one error (or None) per update. Raises for request-level errors."""
        self._check_device(request.device_id)
        if request.role or request.role_id:
            raise RequestError(UNIMPLEMENTED, "only the default role is supported")
        with self._streams:
            self._arbitration.check_primary(election_id_of(request), "Write")
        if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            raise RequestError(UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
        if len(request.updates) > MAX_WRITE_UPDATES:
            raise RequestError(
                RESOURCE_EXHAUSTED,
                f"Write: {len(request.updates)} updates in one request, more than this switch "
                f"takes ({MAX_WRITE_UPDATES}); nothing was applied: send them in several "
                "requests")
        results: list[RequestError | None] = []
        with self._control:
            state = self._committed()
            with self.switch.lock:
                for position, update in enumerate(request.updates):
                    try:
                        entities.apply_update(state, update)
                        results.append(None)
                    except RequestError as error:
                        # the message as simple_switch_grpc words it: its place in the batch
                        # is its place in the status details (service.py names it too)
                        results.append(error)
                    except Exception as exc:  # a server or runtime bug: this update only
                        log.exception("P4Runtime Write update %d failed", position)
                        results.append(RequestError(INTERNAL, f"{type(exc).__name__}: {exc}"))
        return results

    def read(self, request: p4runtime_pb2.ReadRequest) -> list[p4runtime_pb2.ReadResponse]:
        """The ReadResponses to stream for a request (all built before the first is sent)."""
        self._check_device(request.device_id)
        replies = entities.ReadReplies()
        with self._control:
            state = self._committed()
            with self.switch.lock:
                for position, entity in enumerate(request.entities):
                    try:
                        entities.read_entity(state, entity, replies)
                    except RequestError as error:
                        raise error.within(f"entity {position}") from None
        return replies.responses

    # -- stream channels --------------------------------------------------------------------------

    def stream_open(self, client: Hashable, send: Sender) -> None:
        with self._streams:
            if len(self._senders) >= MAX_STREAMS:
                raise RequestError(
                    RESOURCE_EXHAUSTED, f"at most {MAX_STREAMS} stream channels are supported"
                )
            self._senders[client] = send

    def stream_close(self, client: Hashable) -> None:
        with self._streams:
            self._senders.pop(client, None)
            notifications = self._arbitration.disconnect(client)
            self._deliver(notifications)

    def stream_message(self, client: Hashable, message: p4runtime_pb2.StreamMessageRequest) -> None:
        """Handle one message from a stream; a RequestError means: end this stream with it."""
        which = message.WhichOneof("update")
        if which == "arbitration":
            update = message.arbitration
            with self._streams:
                notifications = self._arbitration.update(
                    client,
                    device_id=update.device_id,
                    election_id=election_id_of(update),
                    role_name=update.role.name,
                    role_id=update.role.id,
                )
                self._deliver(notifications)
        elif which == "packet":
            self._handle_packet_out(client, message.packet)
        elif which == "digest_ack":
            self._digest_ack(client, message.digest_ack)
        else:
            # `which` is None for an empty message, or one whose update is newer than this
            # server's P4Runtime (an unknown field)
            what = f"stream message '{which}'" if which else "a stream message without an update"
            self._send_stream_error(client, RequestError(UNIMPLEMENTED, f"{what} is not supported"))

    def _handle_packet_out(self, client: Hashable, packet: p4runtime_pb2.PacketOut) -> None:
        with self._streams:
            is_primary = self._arbitration.primary == client
        state = self._state
        try:
            if not is_primary:
                raise RequestError(PERMISSION_DENIED, "PacketOut from a client that is not primary")
            if state is None:
                raise RequestError(FAILED_PRECONDITION, "PacketOut before a pipeline config is set")
            data = packet_out_bytes(state.pipeline.packet_out, packet)
        except RequestError as error:
            self._send_stream_error(client, error, packet)
            return
        self._packet_out(data)

    def _send_stream_error(self, client, error: RequestError, packet=None) -> None:
        response = p4runtime_pb2.StreamMessageResponse()
        response.error.canonical_code = error.numeric_code
        response.error.message = error.message
        if packet is not None:
            response.error.packet_out.packet_out.CopyFrom(packet)
        with self._streams:
            send = self._senders.get(client)
        if send is not None:
            send(response)

    def _deliver(self, notifications: list[Notification]) -> None:
        """Send arbitration notifications; call with `_streams` held."""
        for note in notifications:
            send = self._senders.get(note.client)
            if send is None:
                continue
            response = p4runtime_pb2.StreamMessageResponse()
            arbitration = response.arbitration
            arbitration.device_id = note.device_id
            if note.election_id is not None:
                arbitration.election_id.high = note.election_id >> 64
                arbitration.election_id.low = note.election_id & ((1 << 64) - 1)
            code = RequestError(note.code, "").numeric_code
            arbitration.status.CopyFrom(status_pb2.Status(code=code, message=note.message))
            send(response)

    def packet_in(self, data: bytes) -> None:
        """A packet the pipeline sent to the CPU port: to the primary, as a PacketIn."""
        state = self._state
        header = state.pipeline.packet_in if state is not None else None
        try:
            message = packet_in_message(header, data)
        except ValueError:
            self.packets_in_dropped += 1
            return
        with self._streams:
            primary = self._arbitration.primary
            send = self._senders.get(primary) if primary is not None else None
        if send is None:
            self.packets_in_dropped += 1
            return
        if not send(p4runtime_pb2.StreamMessageResponse(packet=message)):
            self.packets_in_dropped += 1


def _same_ids(old: Pipeline, new: Pipeline) -> bool:
    return old.json_names == new.json_names
