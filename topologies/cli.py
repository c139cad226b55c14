"""Write a topology as JSON, from a shape and its sizes: the file other commands read.

    python -m topologies leaf-spine --spines 2 --leaves 4 --hosts-per-leaf 4 --bw 100 \\
        --oversubscription 2 -o leafspine.json
    python -m topologies fat-tree --k 4 -o fattree4.json
    inaemu controller --topology leafspine.json ...

The JSON goes to `--output` (or stdout); one summary line goes to stderr. Exposes
`add_arguments(parser)` and `run(args) -> int` like every `inaemu` subcommand: exit 0 on success,
2 on bad sizes or an unwritable file.
"""

from __future__ import annotations

import argparse
import sys

from topologies import builders
from topologies.model import Topology, TopologyError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    shapes = parser.add_subparsers(dest="shape", metavar="SHAPE", required=True)

    star = shapes.add_parser("star", help="one switch and its hosts")
    star.add_argument("--hosts", type=int, required=True, metavar="N")

    linear = shapes.add_parser("linear", help="a chain of switches, each with its hosts")
    linear.add_argument("--switches", type=int, required=True, metavar="N")
    linear.add_argument("--hosts-per-switch", type=int, default=1, metavar="H")

    clos = shapes.add_parser("leaf-spine", help="two tiers: every leaf linked to every spine")
    clos.add_argument("--spines", type=int, required=True, metavar="S")
    clos.add_argument("--leaves", type=int, required=True, metavar="L")
    clos.add_argument("--hosts-per-leaf", type=int, required=True, metavar="H")
    clos.add_argument("--oversubscription", type=float, default=1.0, metavar="RATIO",
                      help="host bandwidth of a leaf over its uplink bandwidth (1: non-blocking); "
                           "leaf-spine links run at bw * H / (S * RATIO)")

    fat = shapes.add_parser("fat-tree", help="k-ary fat-tree: k^3/4 hosts, edge/agg/core tiers")
    fat.add_argument("--k", type=int, required=True, metavar="K", help="an even number of ports")

    for shape in (star, linear, clos, fat):
        shape.add_argument("--bw", type=float, metavar="MBPS",
                           help="host link bandwidth in Mbit/s (default: unshaped)")
        shape.add_argument("--loss", type=float, default=0.0, metavar="PERCENT",
                           help="random loss per link direction (0)")
        shape.add_argument("--delay-ms", type=float, default=0.0, metavar="MS",
                           help="one-way delay per link (0)")
        shape.add_argument("-o", "--output", metavar="FILE", help="where to write the JSON (stdout)")


def build(args: argparse.Namespace) -> Topology:
    """The topology the arguments describe; TopologyError names a bad value."""
    link = {"bw": args.bw, "loss": args.loss, "delay_ms": args.delay_ms}
    if args.shape == "star":
        return builders.star(args.hosts, **link)
    if args.shape == "linear":
        return builders.linear(args.switches, args.hosts_per_switch, **link)
    if args.shape == "leaf-spine":
        return builders.leaf_spine(args.leaves, args.spines, args.hosts_per_leaf, **link,
                                   oversubscription=args.oversubscription)
    return builders.fat_tree(args.k, **link)


def run(args: argparse.Namespace) -> int:
    try:
        topology = build(args)
    except TopologyError as e:
        print(f"topology: error: {e}", file=sys.stderr)
        return 2
    text = topology.to_json()
    if args.output:
        try:
            with open(args.output, "w") as out:
                out.write(text)
        except OSError as e:
            print(f"topology: error: {args.output}: cannot write: {e.strerror}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    print(f"topology {topology.name}: {len(topology.switches)} switches, {len(topology.hosts)} "
          f"hosts, {len(topology.links)} links", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m topologies",
                                     description="Write a topology as JSON.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
