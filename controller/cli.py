"""`inaemu controller`: push a program and routes to the running switches of a topology.

    inaemu controller --topology topo.json --p4info build/l3_forward.p4info.txtpb \\
        --json build/l3_forward.json --routes --read-counters rx_port_counter

Connects to every switch of the topology (127.0.0.1:grpc_port, its device id) as primary, pushes
the program when --p4info/--json are given (otherwise adopts the one each switch runs), installs
/32 routes to every host along shortest paths (--routes; equal-cost paths become ECMP groups when
the program has `ecmp_group`/`ecmp_nhop`, unless --no-ecmp) and ARP flooding groups (--arp-flood),
then reads counters. Prints one progress line per step and a summary; exit 0 on success, 1 when a
switch refuses or cannot be reached, 2 on bad arguments or input files.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from controller.errors import ControllerError, P4InfoError, TLSConfigError
from controller.fabric import Fabric
from controller.routing import L3_FORWARD, L3_FORWARD_ARP, L3Program
from controller.tls import ClientTLS
from topologies.builders import from_spec
from topologies.model import Topology, TopologyError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topology", required=True, metavar="FILE|SPEC",
                        help="topology JSON file (python -m topologies writes one), or a spec such as "
                             "star:3, linear:2,1, leaf_spine:L,S,H, fat_tree:4")
    parser.add_argument("--p4info", metavar="FILE", help="P4Info (text format) of the program to push")
    parser.add_argument("--json", metavar="FILE", help="BMv2 JSON of the program to push")
    parser.add_argument("--routes", action="store_true",
                        help="install a /32 route to every host on every switch")
    parser.add_argument("--aggregate-routes", action="store_true",
                        help="with --routes: the fewest prefixes that forward every host as its "
                             "/32 would, per pod or leaf (docs/controller.md)")
    parser.add_argument("--no-ecmp", action="store_true",
                        help="one path per route (the lowest port) even where the program has ECMP")
    parser.add_argument("--route-table", default=L3_FORWARD.table, metavar="TABLE",
                        help=f"LPM table for routes ({L3_FORWARD.table})")
    parser.add_argument("--route-action", default=L3_FORWARD.action, metavar="ACTION",
                        help=f"route action taking (mac, port) ({L3_FORWARD.action})")
    parser.add_argument("--route-params", default=f"{L3_FORWARD.mac_param},{L3_FORWARD.port_param}",
                        metavar="MAC,PORT", help="the route action's MAC and port parameter names")
    parser.add_argument("--arp-flood", action="store_true",
                        help="write per-port multicast groups and arp_flood entries (tree topologies)")
    parser.add_argument("--read-counters", action="append", default=[], metavar="NAME",
                        help="read every cell of this counter on every switch (repeatable)")
    parser.add_argument("--grpc-host", default="127.0.0.1", metavar="HOST",
                        help="where the switches' gRPC servers listen (127.0.0.1)")
    add_tls_arguments(parser)
    parser.add_argument("--election-id", type=int, default=1, metavar="N",
                        help="election id (low 64 bits) to claim primary with (1)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="how long to wait for each switch to answer (10)")


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """The P4Runtime client's TLS options, the same on every command that connects to switches
    (p4runtime-shell's --ssl --cacert --cert --private-key)."""
    group = parser.add_argument_group("P4Runtime over TLS (switches run with --grpc-server-ssl)")
    group.add_argument("--grpc-ssl", action="store_true",
                       help="connect over TLS (implied by the three options below)")
    group.add_argument("--grpc-cacert", metavar="PEM",
                       help="CA certificate the switches' certificates are signed by "
                            "(default: the system's CA store)")
    group.add_argument("--grpc-cert", metavar="PEM",
                       help="client certificate, for switches that require one "
                            "(--grpc-server-with-client-auth)")
    group.add_argument("--grpc-key", metavar="PEM", help="the private key of --grpc-cert")


def client_tls(args: argparse.Namespace) -> ClientTLS | None:
    """The TLS settings the command line asks for (None: plaintext); `TLSConfigError` for a
    certificate without its key or a file that cannot be used."""
    tls = ClientTLS.from_options(args.grpc_ssl, args.grpc_cacert, args.grpc_cert, args.grpc_key)
    if tls is not None:
        tls.check()
    return tls


def _say(line: str) -> None:
    print(f"controller: {line}", flush=True)


def _fail(message: str, status: int) -> int:
    print(f"inaemu controller: error: {message}", file=sys.stderr, flush=True)
    return status


def _load_topology(spec: str) -> Topology:
    if Path(spec).exists() or spec.endswith(".json"):
        return Topology.load(spec)
    return from_spec(spec)


def run(args: argparse.Namespace) -> int:
    if bool(args.p4info) != bool(args.json):
        return _fail("--p4info and --json go together (or give neither to keep the running program)", 2)
    params = args.route_params.split(",")
    if len(params) != 2 or not all(params):
        return _fail(f"--route-params {args.route_params!r}: expected MAC_PARAM,PORT_PARAM", 2)
    if args.timeout <= 0 or args.election_id < 1:
        return _fail("--timeout and --election-id must be positive", 2)
    program = L3Program(args.route_table, args.route_action, params[0], params[1],
                        ecmp_action=L3_FORWARD.ecmp_action)
    try:
        topology = _load_topology(args.topology)
    except TopologyError as e:
        return _fail(f"topology: {e}", 2)
    try:
        tls = client_tls(args)
    except TLSConfigError as e:
        return _fail(str(e), 2)
    # gRPC's C core logs its own lines about a failed TLS handshake; ours says why, once
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    _say(f"topology {topology.name}: {_count(topology.switches, 'switch')}, "
         f"{_count(topology.hosts, 'host')}")
    routes = 0
    try:
        with Fabric(topology, grpc_host=args.grpc_host, election_id=(0, args.election_id),
                    timeout=args.timeout, progress=_say, tls=tls) as fabric:
            if args.p4info:
                fabric.push_pipeline(args.p4info, args.json)
            else:
                fabric.adopt_pipeline()
            if args.routes:
                routes = fabric.install_routes(program, ecmp=not args.no_ecmp,
                                               aggregate=args.aggregate_routes)
            if args.arp_flood:
                fabric.install_flooding(L3_FORWARD_ARP)
            for name in args.read_counters:
                _print_counters(name, fabric.read_counter(name))
    except P4InfoError as e:
        return _fail(str(e), 2)
    except ControllerError as e:
        return _fail(str(e), 1)
    pushed = "pushed" if args.p4info else "kept"
    _say(f"done: {_count(topology.switches, 'switch')}, pipeline {pushed}, "
         f"{_count(range(routes), 'route')}")
    return 0


def _count(items, noun: str) -> str:
    n = len(items)
    return f"{n} {noun}" + ("" if n == 1 else ("es" if noun.endswith("ch") else "s"))


def _print_counters(name: str, per_switch: dict[str, dict[int, tuple[int, int]]]) -> None:
    for switch, cells in per_switch.items():
        busy = {i: v for i, v in sorted(cells.items()) if v != (0, 0)}
        if not busy:
            _say(f"{switch} {name}: all {len(cells)} cells zero")
        for i, (packets, octets) in busy.items():
            _say(f"{switch} {name}[{i}]: {packets} packets, {octets} bytes")
