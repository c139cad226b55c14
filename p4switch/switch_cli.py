"""`inaemu switch`: a software switch on Linux interfaces, shaped like simple_switch_grpc.

    inaemu switch prog.json -i 1@veth1 -i 2@veth2 --device-id 0 --grpc-server-addr 0.0.0.0:9559
    inaemu switch --no-p4 -i 1@s1-eth1 -- --cpu-port 255       # simple_switch_grpc's "--" form

The command line follows simple_switch_grpc's (its target options after `--` are accepted too),
plus inaemu's link impairments (`--loss`, `--delay-ms`, `--seed`). It prints exactly one line on
stdout when ready, blocks on its sockets while idle, and on SIGTERM or SIGINT closes its sockets,
flushes its pcaps, prints a per-port summary and exits 0. Bad arguments print one error line and
exit 2; a missing P4Runtime server module or an unusable gRPC address exits 1.

Scripts written for simple_switch_grpc run unchanged (the p4lang tutorials' command line:
`-i 1@s1-eth1 --pcap DIR --nanolog ipc://... --device-id 0 prog.json --log-console
--thrift-port 9090 -- --grpc-server-addr 0.0.0.0:50051 --cpu-port 255`): the JSON may stand
anywhere before `--`, everything after `--` is a target option, `--thrift-port N` serves BMv2's
Thrift runtime for simple_switch_CLI (docs/thrift.md), and options inaemu does not implement
(nanomsg logs, the debugger) are accepted with one note on stderr saying so.

With `--packet-in ipc://PATH` (or `tcp://HOST:PORT`) every port is behind one nanomsg PAIR
socket instead of interfaces, as simple_switch's option has it (BMv2's own tests, PTF's nn
platform, p4c's PTF harness): p4switch/ports/packetin_socket.py, docs/switch.md.

With `--use-files WAIT` (simple_switch's option) ports are pcap files instead of interfaces:
`-i N@NAME` reads port N's arrivals from `NAME_in.pcap` (a file, or a FIFO written slowly) and
writes what leaves port N to `NAME_out.pcap`, as p4c's STF test harness (bmv2stf.py) expects of
simple_switch (p4switch/ports/pcapfiles.py). See docs/switch.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TextIO

from p4switch.driver import PacketDriver
from p4switch.ports.capture import PcapCapture
from p4switch.ports.errors import PortConfigError, PortError
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.packetin_socket import PacketInSocket
from p4switch.ports.pcapfiles import PcapFilePorts
from p4switch.ports.rawsock import RawSocketPort
from p4switch.switch_options import (EXIT_BAD_ARGUMENTS, EXIT_FAILURE, SwitchOptions,
                                     add_arguments, parse_options)

def run(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args)
    except PortConfigError as error:
        return _fail(str(error), EXIT_BAD_ARGUMENTS)
    for note in options.notes:
        print(f"inaemu switch: note: {note}", file=sys.stderr, flush=True)
    _log_to_stderr()
    process = SwitchProcess(options)
    previous = {sig: signal.signal(sig, process.on_signal)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        process.start()
        print(process.ready_line(), flush=True)
        process.serve()
    except SwitchError as error:
        return _fail(str(error), error.exit_status)
    except StartInterrupted:
        pass                 # stopped while waiting for a FIFO's writer: an ordinary stop
    finally:
        process.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for line in process.summary_lines():
        print(f"inaemu switch: {line}", flush=True)
    return 0


def packet_code_line(switch) -> str | None:
    """Which parts of the loaded program ran as C (INAEMU_NATIVE, docs/runtime.md), and why
    the others did not; None without a program."""
    if switch is None or not switch.has_program:
        return None
    from p4switch.runtime.cgen import nativebuild
    code = switch.program.untraced
    if switch.trace is not None:
        return "packet code: Python (a per-packet trace runs the traced Python code)"
    if not nativebuild.enabled():
        return "packet code: Python (INAEMU_NATIVE=0)"
    if code.native is None:
        return "packet code: Python"
    in_use = ", ".join(code.native_in_use)
    refused = "; ".join(f"{name}: {why}" for name, why in code.native.refused.items())
    if not in_use:
        problem = next(iter(nativebuild.why_not.values()), "not built")
        return f"packet code: Python ({problem.splitlines()[0][:200]})"
    return f"packet code: C for {in_use}" + (f"; Python for {refused}" if refused else "")


def _log_to_stderr() -> None:
    """The server's warnings (e.g. a deprecated device config) as `inaemu switch:` lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("inaemu switch: %(levelname)s: %(message)s"))
    logger = logging.getLogger("p4switch")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)


def _fail(message: str, status: int) -> int:
    print(f"inaemu switch: error: {message}", file=sys.stderr, flush=True)
    return status


def _note_fifo(path: Path) -> None:
    """Before a blocking open of a FIFO input: say what the switch waits for."""
    print(f"inaemu switch: note: waiting for a writer to open the FIFO {path}",
          file=sys.stderr, flush=True)


class SwitchError(Exception):
    """The switch cannot start or must stop (bad JSON, unusable interface, failed assertion)."""

    def __init__(self, message: str, exit_status: int = EXIT_BAD_ARGUMENTS) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class StartInterrupted(Exception):
    """SIGTERM/SIGINT while start-up waits in a blocking open (a FIFO nobody has opened yet):
    raised by the signal handler to leave the open, as simple_switch dies there."""


class SwitchProcess:
    """Assembles runtime, ports, captures, driver and P4Runtime server; tears them down in order."""

    def __init__(self, options: SwitchOptions) -> None:
        self.options = options
        self.switch = None
        self.ports: list = []
        self.files: PcapFilePorts | None = None       # --use-files
        self.packet_in: PacketInSocket | None = None   # --packet-in
        self.capture = None
        self.driver: PacketDriver | None = None
        self.server = None
        self.thrift = None                 # ThriftRuntimeServer (--thrift-port)
        self.notifications = None          # NotificationsSocket, as simple_switch (--no-grpc)
        self.learning = None               # thrift.learning.Learning with it
        self.ageing = None                 # thrift.ageing.AgeingSweeper with it and Thrift
        self._log_stream: TextIO | None = None
        self._stop_requested = False
        self._interruptible = False       # in a blocking open that a signal must break
        self._closed = False
        self.discarded_held = 0

    def start(self) -> None:
        """Interfaces, program, pcap file ports, packet driver, servers (in that order; with
        --use-files the files' reader starts last, as simple_switch starts reading after its
        servers: a runtime server that must listen before packets flow goes before it)."""
        options = self.options
        if options.packet_in is not None:
            self._open_packet_in()
        elif options.use_files is None:
            try:
                for port, name in options.interfaces.items():
                    self.ports.append(RawSocketPort(port, name))
            except PortError as error:
                raise SwitchError(str(error)) from None
        trace = self._open_trace()
        self.switch = self._load_switch(trace)
        # Hook for the egress queue model: what `--priority-queues` asked (None: not given).
        self.switch.priority_queues = options.priority_queues
        try:
            options.queues.apply(self.switch)
        except PortConfigError as error:
            raise SwitchError(str(error)) from None
        if options.pcap_dir is not None:
            try:
                self.capture = PcapCapture(options.pcap_dir, options.interfaces)
            except PortError as error:
                raise SwitchError(str(error)) from None
        if options.use_files is not None:
            self._open_files()
        grpc_cpu_port = options.cpu_port if options.grpc_address else None
        forwarder = Forwarder(self.switch, options.interfaces, plan=options.plan,
                              seed=options.seed, cpu_port=grpc_cpu_port, tap=self.capture,
                              every_port=self.packet_in is not None)
        self.driver = PacketDriver(forwarder, self.ports, bundle=self.packet_in)
        if self._stop_requested:
            self.driver.stop()
        if options.grpc_address:
            self._start_server(grpc_cpu_port)
        if options.notifications_address is not None and (
                options.notifications_given or _notifies(self.switch)):
            self._start_learning()
        if options.thrift_port is not None:
            self._start_thrift()
        if self.files is not None:
            self.files.start()

    def _open_packet_in(self) -> None:
        """Bind the --packet-in socket before anything is announced: a peer may dial as soon
        as the ready line is out."""
        self.packet_in = PacketInSocket(self.options.packet_in, log=_log_line)
        try:
            self.packet_in.start()
        except PortError as error:       # close() releases what it holds
            raise SwitchError(str(error), EXIT_FAILURE) from None

    def _open_files(self) -> None:
        """simple_switch's start-up with --use-files: in port order, each NAME_in.pcap opened
        and its header read (a FIFO blocks until its writer opens it and writes the header),
        then NAME_out.pcap created. A signal meanwhile ends the start (StartInterrupted)."""
        self.files = PcapFilePorts(wait_s=self.options.use_files)
        self._interruptible = True
        try:
            if self._stop_requested:
                raise StartInterrupted
            for port, name in sorted(self.options.interfaces.items()):
                self.files.open(port, name, on_fifo=_note_fifo)
        except PortError as error:
            raise SwitchError(str(error)) from None
        finally:
            self._interruptible = False
        self.ports = list(self.files.ports)

    def serve(self) -> None:
        """Run the packet loop until `stop()`; a failed P4 assertion ends it like BMv2's abort."""
        from p4switch.runtime.errors import AssertionFailure   # importable: start() loaded it
        try:
            self.driver.run()
        except AssertionFailure as error:
            raise SwitchError(f"P4 assertion failed, stopping: {error}", EXIT_FAILURE) from None
        except PortError as error:      # a malformed input pcap record, an unwritable output
            raise SwitchError(f"{error}; stopping", EXIT_FAILURE) from None

    def stop(self) -> None:
        self._stop_requested = True
        if self.driver is not None:
            self.driver.stop()
        if self.packet_in is not None:
            self.packet_in.interrupt()   # the driver may be in a send to a peer reading nothing

    def on_signal(self, *_: object) -> None:
        """SIGTERM/SIGINT: stop; during a blocking open at start-up, leave it too."""
        self.stop()
        if self._interruptible:
            self._interruptible = False
            raise StartInterrupted

    def close(self) -> None:
        """Stop the server, close sockets, flush captures; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.server is not None:
            self.server.stop()
        if self.thrift is not None:
            self.thrift.stop()
        if self.ageing is not None:
            self.ageing.close()
        if self.learning is not None:
            self.learning.close()
        if self.notifications is not None:
            self.notifications.close()
        for port in self.ports:
            port.close()
        if self.driver is not None:
            self.discarded_held = self.driver.forwarder.discard_held() + \
                self.driver.output.discard()       # refused by a full socket, never sent
            self.driver.close()
        if self.files is not None:
            self.files.close()
        if self.packet_in is not None:
            self.packet_in.close()
        if self.capture is not None:
            self.capture.close()
        if self._log_stream is not None and self._log_stream is not sys.stdout:
            self._log_stream.close()

    def ready_line(self) -> str:
        options = self.options
        if self.server is not None:
            host = options.grpc_address.rpartition(":")[0]
            scheme = "grpc"
            if options.tls is not None:
                scheme = "grpc+mtls" if options.tls.client_auth else "grpc+tls"
            grpc = f"{scheme} {host}:{self.server.bound_port}"
        else:
            grpc = "grpc off"
        count = len(options.interfaces)
        ports = f"{count} port{'s' if count != 1 else ''}"
        if options.packet_in is not None:
            ports = f"ports on packet-in {options.packet_in}"
        thrift = f", thrift {self.thrift.port}" if self.thrift is not None else ""
        return f"inaemu switch ready: device {options.device_id}, {ports}, {grpc}{thrift}"

    def summary_lines(self) -> list[str]:
        if self.driver is None:
            return []
        lines = self.driver.forwarder.summary_lines(self.options.interfaces)
        if self.files is not None:
            lines.append(self.files.status_line())
        if self.packet_in is not None:
            lines.append(self.packet_in.status_line())
        code_line = packet_code_line(self.switch)
        if code_line:
            lines.append(code_line)
        if self.server is not None and self.server.tls_refused:
            lines.append(f"P4Runtime clients refused at the TLS handshake: "
                         f"{self.server.tls_refused}")
        if self.discarded_held:
            lines.append(f"delayed or held packets discarded at exit: {self.discarded_held}")
        if self.driver.packet_outs_dropped:
            lines.append(f"packet-outs dropped (no --cpu-port): {self.driver.packet_outs_dropped}")
        if self.driver.packet_in_errors:
            lines.append(f"packet-ins the server refused: {self.driver.packet_in_errors}")
        return lines

    # -- pieces ---------------------------------------------------------------------------------
    def _open_trace(self):
        options = self.options
        if options.log_file is None and not options.log_console:
            return None
        try:
            from p4switch.runtime.trace import TextTrace
        except ImportError as error:
            raise SwitchError(f"--log-file/--log-console need p4switch.runtime.trace: {error}",
                              EXIT_FAILURE) from None
        if options.log_file is not None:
            try:
                self._log_stream = open(options.log_file, "w", encoding="utf-8")
            except OSError as error:
                raise SwitchError(f"--log-file {options.log_file}: {error.strerror}") from None
            return TextTrace(self._log_stream, flush=options.log_flush)
        self._log_stream = sys.stdout
        return TextTrace(self._log_stream, flush=True)

    def _load_switch(self, trace):
        try:
            from p4switch.runtime import Switch, load_bmv2_json
            from p4switch.runtime.errors import P4SwitchError
        except ImportError as error:
            raise SwitchError(f"the switch runtime (p4switch.runtime) is not available: "
                              f"{error}", EXIT_FAILURE) from None
        path = self.options.json_path
        if path is None:
            return Switch(None, trace=trace)
        try:
            config = load_bmv2_json(path.read_bytes())
            return Switch(config, trace=trace)
        except OSError as error:
            raise SwitchError(f"cannot read {path}: {error.strerror}") from None
        except (P4SwitchError, ValueError) as error:
            raise SwitchError(f"{path}: {error}") from None

    def _start_server(self, cpu_port: int | None) -> None:
        options = self.options
        # gRPC's C core logs its own copy of bind errors to stderr; ours is the one line to show.
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")
        try:
            from p4switch.server import P4RuntimeServer
        except ImportError as error:
            raise SwitchError(
                f"the P4Runtime server (p4switch.server) is not available ({error}); "
                "run with --no-grpc", EXIT_FAILURE) from None
        server = P4RuntimeServer(self.switch, device_id=options.device_id, cpu_port=cpu_port,
                                 address=options.grpc_address, packet_out=self.driver.packet_out,
                                 tls=options.tls)
        try:
            server.start()
        except Exception as error:   # the server's own start error, or grpc's RuntimeError
            message = str(error)
            if options.grpc_address not in message:
                message = f"cannot start the P4Runtime server on {options.grpc_address}: {message}"
            raise SwitchError(message, EXIT_FAILURE) from None
        self.server = server
        self.driver.packet_in = server.packet_in


    def _start_thrift(self) -> None:
        from p4switch.thrift import RuntimeService, ThriftRuntimeServer, ThriftServerError
        options = self.options
        text = None
        if options.json_path is not None:
            try:
                text = options.json_path.read_text()
            except (OSError, UnicodeDecodeError):
                text = None          # the switch loaded it; bm_get_config then re-serializes
        ifaces = dict(options.interfaces)
        ports = lambda: [(p, ifaces[p], True) for p in sorted(ifaces)]   # noqa: E731
        if self.packet_in is not None:
            ports = self.packet_in.port_table
        service = RuntimeService(self.switch, device_id=options.device_id,
                                 thrift_port=options.thrift_port, config_text=text,
                                 ports=ports, learning=self.learning,
                                 notifications_address=options.notifications_address)
        if self.notifications is not None:        # entries age only when Thrift sets TTLs
            from p4switch.thrift.ageing import AgeingSweeper
            self.ageing = AgeingSweeper(service, self.notifications.publish)
        server = ThriftRuntimeServer(service, port=options.thrift_port, log=_log_line)
        try:
            server.port = service.thrift_port = server.start()
        except ThriftServerError as error:
            raise SwitchError(str(error), EXIT_FAILURE) from None
        self.thrift = server

    def _start_learning(self) -> None:
        """simple_switch's notifications socket (a PUB socket) and its learning: samples to
        the learning engine, its notifications on the socket (ageing ones too, once Thrift
        runs); bound when asked for, or when the program at start learns or ages entries
        (switches whose programs do neither leave the shared default path alone). An address
        already taken (another switch's default path) costs the notifications only, with a
        note."""
        from p4switch.thrift.learning import Learning
        from p4switch.thrift.notifications import NotificationsSocket
        address = self.options.notifications_address
        socket_ = NotificationsSocket(address)
        try:
            socket_.start()
        except PortError as error:
            socket_.close()
            print(f"inaemu switch: note: {error}: no learning notifications are published",
                  file=sys.stderr, flush=True)
            return
        self.notifications = socket_
        self.learning = Learning(self.switch, self.options.device_id, socket_.publish)


def _notifies(switch) -> bool:
    """Whether the loaded program can give notifications: it learns, or a table ages."""
    if not switch.has_program:
        return False
    program = switch.program
    return bool(program.learn_lists) or any(
        switch.table_supports_timeout(name) for name in switch.tables())


def _log_line(line: str) -> None:
    """A Thrift call's failure or a refused packet-in message, for whoever reads the switch's
    stderr (a Thrift caller gets the code; this says why)."""
    print(f"inaemu switch: {line}", file=sys.stderr, flush=True)


# -- validation (pure: raises PortConfigError, touches nothing) -----------------------------------


__all__ = ["SwitchOptions", "SwitchProcess", "StartInterrupted", "add_arguments",
           "parse_options", "run"]
