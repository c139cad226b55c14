"""`inaemu switch`'s command line: simple_switch_grpc's options (its target options after `--`
too), simple_switch's and inaemu's own, checked into one `SwitchOptions`; every problem is a
`PortConfigError` that names the option. The switch it describes runs in switch_cli.py."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from p4switch.ports.errors import PortConfigError
from p4switch.ports.impairment import ImpairmentPlan
from p4switch.ports.packetin_socket import parse_address
from p4switch.ports.queue_options import QueuePlan

if TYPE_CHECKING:
    from p4switch.server.tls import ServerTLS

DEFAULT_GRPC_ADDRESS = "0.0.0.0:9559"
MAX_PORT = 510                    # 511 is BMv2's drop port
MAX_IFNAME = 15                   # IFNAMSIZ - 1
EXIT_BAD_ARGUMENTS = 2
EXIT_FAILURE = 1


@dataclass(frozen=True, kw_only=True)
class SwitchOptions:
    """The validated command line."""

    json_path: Path | None
    interfaces: dict[int, str]          # port -> interface, or with use_files a file prefix
    device_id: int = 0
    grpc_address: str | None = DEFAULT_GRPC_ADDRESS      # None: --no-grpc
    thrift_port: int | None = None      # BMv2's Thrift runtime (None: not served; 0: any port)
    cpu_port: int | None = None
    log_file: Path | None = None
    log_console: bool = False
    log_flush: bool = False
    pcap_dir: Path | None = None
    # `--use-files WAIT`: ports are pcap files (NAME_in.pcap / NAME_out.pcap), read from WAIT
    # seconds after start; None: ports are interfaces
    use_files: int | None = None
    # `--packet-in ADDR`: every port behind one nanomsg PAIR socket at ADDR (None: not used)
    packet_in: str | None = None
    notifications_address: str | None = None   # None: P4Runtime takes the digests
    notifications_given: bool = False   # --notifications-addr; else bound only for learning
    plan: ImpairmentPlan = field(default_factory=ImpairmentPlan)
    queues: QueuePlan = field(default_factory=QueuePlan)     # --queue-depth, --queue-rate
    seed: int = 0
    # simple_switch's `--priority-queues N` (target option): egress queues per port. Parsed and
    # validated here; `SwitchProcess` hands it to the switch as `switch.priority_queues` (None:
    # not given, BMv2's default of 1) for the egress queue model to read.
    priority_queues: int | None = None
    notes: tuple[str, ...] = ()          # accepted-but-not-implemented options, said on stderr
    # `--grpc-server-ssl` and its files (None: plaintext P4Runtime, simple_switch_grpc's default).
    # The files are read when the server starts (an unusable one stops the switch, exit 1).
    tls: "ServerTLS | None" = None


LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
# BMv2 logs each packet's way through the pipeline at levels trace and debug; below that no
# per-packet lines are written, so inaemu's (single-level) trace is off for those levels.
PACKET_LOG_LEVELS = ("trace", "debug")
MAX_PRIORITY_QUEUES = 8                # v1model's priority is bit<3>


class SimpleSwitchParser(argparse.ArgumentParser):
    """simple_switch's split: arguments before the first `--` are the switch's, after it the
    target's. argparse alone cannot place a positional (the JSON) anywhere before `--` and keep
    the rest, so the split happens here and the target options land in `target_options`."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        target: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, target = args[:cut], args[cut + 1:]
        namespace, extra = super().parse_known_args(args, namespace)
        namespace.target_options = target
        return namespace, extra

    def error(self, message: str):
        self.exit(2, f"inaemu switch: error: {message} (see 'inaemu switch --help')\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.__class__ = SimpleSwitchParser   # the CLI builds the parser; `--` splits as in BMv2
    parser.add_argument("json", nargs="?", metavar="JSON",
                        help="BMv2 JSON program to load (or --no-p4 and push one over P4Runtime)")
    parser.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                        help="attach Linux interface IFACE as switch port PORT (repeatable); "
                             "with --use-files, PORT@NAME: the files NAME_in.pcap and "
                             "NAME_out.pcap")
    parser.add_argument("--use-files", metavar="WAIT",
                        help="ports are pcap files, as simple_switch's option: -i PORT@NAME "
                             "reads the packets arriving on PORT from NAME_in.pcap (a file or a "
                             "FIFO), merged with the other ports' by timestamp, starting WAIT "
                             "seconds after start, and writes what PORT sends to NAME_out.pcap")
    parser.add_argument("--packet-in", metavar="ADDR",
                        help="every port behind one nanomsg PAIR socket at ADDR (ipc://PATH or "
                             "tcp://HOST:PORT) instead of interfaces, as simple_switch's option "
                             "(PTF's nn platform); -i is then ignored")
    parser.add_argument("--device-id", default="0", metavar="N", help="P4Runtime device id (0)")
    parser.add_argument("--grpc-server-addr", metavar="ADDR",
                        help=f"P4Runtime server address ({DEFAULT_GRPC_ADDRESS})")
    parser.add_argument("--cpu-port", metavar="N",
                        help="port whose packets become P4Runtime packet-ins (none by default)")
    parser.add_argument("--no-p4", action="store_true",
                        help="start with no program; packets are dropped until one is pushed")
    parser.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime server")
    parser.add_argument("--log-file", metavar="PATH",
                        help="write a per-packet trace to PATH (simple_switch writes PATH.txt)")
    parser.add_argument("--log-console", action="store_true",
                        help="write a per-packet trace to stdout")
    parser.add_argument("--log-flush", action="store_true",
                        help="flush the --log-file trace after every packet")
    parser.add_argument("-L", "--log-level", metavar="LEVEL",
                        help="trace or debug: the per-packet trace as --log-file/--log-console "
                             "ask; info, warn, error, off: no per-packet trace (as BMv2) (trace)")
    parser.add_argument("--thrift-port", metavar="N",
                        help="serve BMv2's Thrift runtime (simple_switch_CLI, p4c's STF "
                             "harness) on TCP port N, all addresses; 0: any free port, shown "
                             "in the ready line (default: not served; docs/thrift.md)")
    parser.add_argument("--nanolog", metavar="ADDR",
                        help="accepted for simple_switch compatibility; no nanomsg event log "
                             "is published")
    parser.add_argument("--notifications-addr", metavar="ADDR",
                        help="where learning notifications are published (a nanomsg PUB "
                             "socket, ipc://PATH or tcp://HOST:PORT; default "
                             "ipc:///tmp/bmv2-<device-id>-notifications.ipc) when the switch "
                             "runs as simple_switch (--no-grpc); with P4Runtime, digests go "
                             "to the P4Runtime client instead")
    parser.add_argument("--debugger", action="store_true",
                        help="accepted for simple_switch compatibility; there is no debugger")
    for name in _IGNORED_VALUE_OPTIONS:
        parser.add_argument(name, metavar="X", help="accepted for simple_switch "
                            "compatibility and ignored")
    parser.add_argument("--grpc-server-ssl", action="store_true",
                        help="serve P4Runtime over TLS (also a target option after --)")
    parser.add_argument("--grpc-server-cert", metavar="PEM",
                        help="the switch's certificate (required with --grpc-server-ssl)")
    parser.add_argument("--grpc-server-key", metavar="PEM",
                        help="the private key of --grpc-server-cert (required with "
                             "--grpc-server-ssl)")
    parser.add_argument("--grpc-server-cacert", metavar="PEM",
                        help="CA certificate that client certificates must be signed by")
    parser.add_argument("--grpc-server-with-client-auth", action="store_true",
                        help="mutual TLS: refuse clients without a certificate of "
                             "--grpc-server-cacert's CA")
    parser.add_argument("--priority-queues", metavar="N",
                        help=f"egress priority queues per port, 1..{MAX_PRIORITY_QUEUES} "
                             "(also a target option after --)")
    parser.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                        help="capture <iface>_in.pcap and <iface>_out.pcap per port into DIR (.)")
    parser.add_argument("--loss", action="append", metavar="P|PORT:P",
                        help="drop probability per direction, on all ports or on one (repeatable)")
    parser.add_argument("--delay-ms", action="append", metavar="MS|PORT:MS",
                        help="delay added to packets leaving all ports or one port (repeatable)")
    parser.add_argument("--seed", default="0", metavar="N",
                        help="seed of the loss model (0); same seed, same losses")
    parser.add_argument("--queue-depth", action="append", metavar="N|PORT:N|PORT:PRIO:N",
                        help="egress queue depth in packets, as BMv2's set_queue_depth (64)")
    parser.add_argument("--queue-rate", action="append", metavar="PPS|PORT:PPS|PORT:PRIO:PPS",
                        help="egress queue drain rate, as BMv2's set_queue_rate (0: unlimited)")
    parser.epilog = ("target options after '--', as simple_switch_grpc takes them: "
                     "--grpc-server-addr ADDR, --cpu-port N, --priority-queues N, --drop-port "
                     "511, --max-mc-groups/--max-l1-entries/--max-l2-entries N, "
                     "--disable-swap, --enable-swap, --grpc-server-ssl, --grpc-server-cert PEM, "
                     "--grpc-server-key PEM, --grpc-server-cacert PEM, "
                     "--grpc-server-with-client-auth. With --use-files the ports are pcap "
                     "files (as simple_switch; for p4c's STF harness): the switch runs until "
                     "SIGTERM; see docs/switch.md, 'Files instead of interfaces'")
    parser.set_defaults(target_options=[])


# simple_switch options that change nothing inaemu does (log rotation, port count limits,
# packet dumps into the log): accepted so that scripts run, and ignored.
_IGNORED_VALUE_OPTIONS = ("--log-file-max-size", "--log-file-max-files",
                          "--dump-packet-data", "--max-port-count")


def parse_options(args: argparse.Namespace) -> SwitchOptions:
    """Check the parsed command line; every problem is a `PortConfigError` naming the option."""
    json_text, target = args.json, list(args.target_options or [])
    target_values, stray = _parse_target_options(target)
    grpc_address = target_values.get("grpc_server_addr") or args.grpc_server_addr
    cpu_port_text = target_values.get("cpu_port") or args.cpu_port
    queues_text = target_values.get("priority_queues") or args.priority_queues
    tls, tls_notes = _tls_options(args, target_values)
    log_level = args.log_level or "trace"
    if log_level not in LOG_LEVELS:
        raise PortConfigError(f"--log-level {log_level}: expected one of {', '.join(LOG_LEVELS)}")
    packet_log = log_level in PACKET_LOG_LEVELS

    if json_text is None and not args.no_p4:
        raise PortConfigError("give a BMv2 JSON file, or --no-p4 to start without a program")
    if json_text is not None and args.no_p4:
        raise PortConfigError(f"--no-p4 and a JSON file ({json_text}) exclude each other")
    use_files = _parse_use_files(args.use_files)
    interfaces = _parse_interfaces(args.interface, files=use_files is not None)
    cpu_port = _parse_int("--cpu-port", cpu_port_text, 0, MAX_PORT) if cpu_port_text else None
    plan = ImpairmentPlan.from_options(args.loss, args.delay_ms)
    argument_notes: tuple[str, ...] = ()
    if stray:
        argument_notes += (f"ignored after '--', as simple_switch_grpc ignores them: "
                            f"{' '.join(stray)}",)
    if args.packet_in is not None:
        parse_address(args.packet_in)
        if use_files is not None:
            raise PortConfigError("--packet-in and --use-files exclude each other (both say "
                                  "where the ports are)")
        if not plan.default.is_null or plan.per_port:
            raise PortConfigError("--loss/--delay-ms impair -i ports; with --packet-in there "
                                  "are none")
        if args.pcap is not None:
            argument_notes += (f"--pcap {args.pcap}: ignored with --packet-in (it captures "
                               "-i ports)",)
        if interfaces:
            argument_notes += (f"-i {', '.join(f'{p}@{n}' for p, n in interfaces.items())}: "
                               "ignored with --packet-in, as simple_switch ignores it (ports "
                               "are added over the socket)",)
            interfaces = {}
    for port in plan.ports_named():
        if port not in interfaces:
            raise PortConfigError(f"--loss/--delay-ms name port {port}, which no -i attaches")
    if args.notifications_addr is not None:
        parse_address(args.notifications_addr, "--notifications-addr")
        if not args.no_grpc:
            argument_notes += (f"--notifications-addr {args.notifications_addr}: no learning "
                               "notifications are published there: with P4Runtime, digests "
                               "go to the P4Runtime client (simple_switch_grpc's way)",)
    if args.no_grpc and grpc_address:
        raise PortConfigError("--no-grpc and --grpc-server-addr exclude each other")
    if args.no_grpc and tls is not None:
        raise PortConfigError("--no-grpc and --grpc-server-ssl exclude each other")
    if not args.no_grpc:
        grpc_address = grpc_address or DEFAULT_GRPC_ADDRESS
        _check_address(grpc_address)
        if cpu_port is not None and cpu_port in interfaces:
            raise PortConfigError(f"--cpu-port {cpu_port} is also attached with -i "
                                  f"({interfaces[cpu_port]}); packet-ins go to P4Runtime")
    return SwitchOptions(
        priority_queues=(_parse_int("--priority-queues", queues_text, 1, MAX_PRIORITY_QUEUES)
                         if queues_text else None),
        notes=_compatibility_notes(args, use_files is not None) + tls_notes + argument_notes,
        json_path=Path(json_text) if json_text is not None else None,
        interfaces=interfaces,
        device_id=_parse_int("--device-id", args.device_id, 0, 2**64 - 1),
        grpc_address=None if args.no_grpc else grpc_address,
        thrift_port=(_parse_int("--thrift-port", args.thrift_port, 0, 65535)
                     if args.thrift_port is not None else None),
        cpu_port=cpu_port,
        log_file=Path(args.log_file) if args.log_file and packet_log else None,
        log_console=args.log_console and packet_log,
        log_flush=args.log_flush,
        pcap_dir=(Path(args.pcap) if args.pcap is not None and use_files is None
                  and args.packet_in is None else None),
        use_files=use_files,
        packet_in=args.packet_in,
        notifications_address=(
            (args.notifications_addr or _default_notifications_address(args))
            if args.no_grpc else None),
        notifications_given=args.notifications_addr is not None,
        plan=plan,
        seed=_parse_int("--seed", args.seed, 0, 2**63 - 1),
        queues=QueuePlan.from_options(args.queue_depth, args.queue_rate),
        tls=None if args.no_grpc else tls,
    )


def _tls_options(args: argparse.Namespace,
                 target: dict[str, str]) -> tuple["ServerTLS | None", tuple[str, ...]]:
    """simple_switch_grpc's rules: `--grpc-server-ssl` needs a certificate and its key; the
    files or client authentication without it are ignored, with a note (as its warnings)."""
    def given(name: str):
        return target.get(name) or getattr(args, name)
    ssl_on = bool(given("grpc_server_ssl"))
    files = {name: given(name) for name in ("grpc_server_cacert", "grpc_server_cert",
                                            "grpc_server_key")}
    client_auth = bool(given("grpc_server_with_client_auth"))
    if not ssl_on:
        notes = []
        if any(files.values()):
            notes.append("TLS is off (no --grpc-server-ssl), so the given .pem files are "
                         "ignored")
        if client_auth:
            notes.append("TLS is off (no --grpc-server-ssl), so --grpc-server-with-client-auth "
                         "cannot be applied")
        return None, tuple(notes)
    for name in ("grpc_server_cert", "grpc_server_key"):
        if not files[name]:
            option = "--" + name.replace("_", "-")
            raise PortConfigError(f"--grpc-server-ssl needs {option} (a PEM file)")
    notes = ()
    if client_auth and not files["grpc_server_cacert"]:
        notes = ("--grpc-server-with-client-auth without --grpc-server-cacert: client "
                 "certificates are checked against the system's CA store, as "
                 "simple_switch_grpc does",)
    cacert = files["grpc_server_cacert"]
    from p4switch.server.tls import ServerTLS    # only with TLS: the server package needs grpc
    return ServerTLS(cert=Path(files["grpc_server_cert"]), key=Path(files["grpc_server_key"]),
                     cacert=Path(cacert) if cacert else None, client_auth=client_auth), notes


# simple_switch_grpc's target options (after `--`): name -> (takes a value, what it becomes).
# "ignored": accepted, changes nothing here (inaemu's multicast tables have no fixed size and
# JSON swapping is always possible); "refused": a feature inaemu does not have.
_TARGET_OPTIONS: dict[str, tuple[bool, str]] = {
    "--grpc-server-addr": (True, "grpc_server_addr"),
    "--cpu-port": (True, "cpu_port"),
    "--priority-queues": (True, "priority_queues"),
    "--drop-port": (True, "drop_port"),
    "--max-mc-groups": (True, "ignored"),
    "--max-l1-entries": (True, "ignored"),
    "--max-l2-entries": (True, "ignored"),
    "--disable-swap": (False, "ignored"),
    "--enable-swap": (False, "ignored"),
    "--load-modules": (True, "refused"),
    "--grpc-server-ssl": (False, "grpc_server_ssl"),
    "--grpc-server-cacert": (True, "grpc_server_cacert"),
    "--grpc-server-cert": (True, "grpc_server_cert"),
    "--grpc-server-key": (True, "grpc_server_key"),
    "--grpc-server-with-client-auth": (False, "grpc_server_with_client_auth"),
    "--dp-grpc-server-addr": (True, "refused"),
}


def _parse_target_options(tokens: list[str]) -> tuple[dict[str, str], list[str]]:
    """The target options' values by kind, and the words that are no option: simple_switch_grpc
    ignores those (p4c's PTF harness ends its command line with a literal `&`, which it
    splits into an argument), so they are ignored here too, with a note."""
    values: dict[str, str] = {}
    stray: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not token.startswith("-"):
            stray.append(token)
            index += 1
            continue
        name, sep, value = token.partition("=")
        if name not in _TARGET_OPTIONS:
            known = ", ".join(n for n, (_, k) in _TARGET_OPTIONS.items() if k != "refused")
            raise PortConfigError(f"unknown target option '{token}' after '--' (known: {known})")
        takes_value, kind = _TARGET_OPTIONS[name]
        if takes_value and not sep:
            index += 1
            if index >= len(tokens):
                raise PortConfigError(f"target option {name} needs a value")
            value = tokens[index]
        elif not takes_value and sep:
            raise PortConfigError(f"target option {name} takes no value")
        if kind == "refused":
            raise PortConfigError(f"target option {name} is not supported by inaemu switch")
        if kind == "drop_port" and value != "511":
            raise PortConfigError(f"target option --drop-port {value}: only 511 (the v1model "
                                  "drop port) is supported")
        if kind not in ("ignored", "drop_port"):
            values[kind] = value if takes_value else "on"
        index += 1
    return values, stray


def _default_notifications_address(args: argparse.Namespace) -> str:
    from p4switch.thrift.notifications import default_address
    return default_address(_parse_int("--device-id", args.device_id, 0, 2**64 - 1))


def _compatibility_notes(args: argparse.Namespace, use_files: bool) -> tuple[str, ...]:
    """One line per simple_switch option that was accepted but does nothing here."""
    notes = []
    if use_files and args.pcap is not None:
        notes.append(f"--pcap {args.pcap}: ignored with --use-files, as simple_switch ignores "
                     "it (the ports' NAME_out.pcap files are the captures)")
    if args.nanolog is not None:
        notes.append(f"--nanolog {args.nanolog}: no nanomsg event log is published")
    if args.debugger:
        notes.append("--debugger: there is no debugger")
    return tuple(notes)


def _parse_use_files(text: str | None) -> int | None:
    """`--use-files WAIT`: seconds; a negative WAIT is 0, as simple_switch takes it."""
    if text is None:
        return None
    try:
        wait = int(text, 10)
    except ValueError:
        raise PortConfigError(f"--use-files '{text}' is not an integer (seconds to wait "
                              "before reading the input files)") from None
    return min(max(wait, 0), 2**31 - 1)


def _parse_interfaces(specs: list[str], *, files: bool = False) -> dict[int, str]:
    """-i PORT@IFACE, or with `files` (--use-files) PORT@NAME: NAME is a path prefix (NAME_in.pcap
    and NAME_out.pcap), so any non-empty text, slashes included."""
    interfaces: dict[int, str] = {}
    for spec in specs:
        port_text, sep, name = spec.partition("@")
        if not sep or not port_text or not name:
            expected = "PORT@NAME, e.g. 0@pcap0" if files else "PORT@IFACE, e.g. 1@veth1"
            raise PortConfigError(f"-i {spec}: expected {expected}")
        port = _parse_int(f"-i {spec}: port", port_text, 0, MAX_PORT)
        if not files and (len(name) > MAX_IFNAME or "/" in name
                          or any(c.isspace() for c in name)):
            raise PortConfigError(f"-i {spec}: '{name}' is not a valid interface name")
        if port in interfaces:
            raise PortConfigError(f"-i {spec}: port {port} is already {interfaces[port]}")
        if name in interfaces.values():
            what = "files" if files else "interface"
            raise PortConfigError(f"-i {spec}: {what} {name} is attached twice")
        interfaces[port] = name
    return interfaces


def _parse_int(option: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        raise PortConfigError(f"{option} '{text}' is not an integer") from None
    if not low <= value <= high:
        raise PortConfigError(f"{option} {value} is outside {low}..{high}")
    return value


def _check_address(address: str) -> None:
    host, sep, port_text = address.rpartition(":")
    if not sep or not host:
        raise PortConfigError(f"--grpc-server-addr {address}: expected HOST:PORT")
    _parse_int(f"--grpc-server-addr {address}: port", port_text, 0, 65535)


__all__ = ["DEFAULT_GRPC_ADDRESS", "EXIT_BAD_ARGUMENTS", "EXIT_FAILURE", "SwitchOptions",
           "add_arguments", "parse_options"]
