"""Command-line options that `inaemu run` and `inaemu train` share: the network's shape and the
INA job's knobs, so both commands spell, default and document them the same way."""

from __future__ import annotations

import argparse

from hosts.ina_wire import MAX_K
from inaemu.experiment.config import (AGGREGATIONS, LANE_FORMATS, MAX_FAT_TREE_K,
                                      MAX_MININET_FAT_TREE_K, SCALINGS, TOPOS)

DEFAULT_ELEMS = MAX_K    # `inaemu run`'s k: a packet fills a 1500-byte MTU, as a TCP segment does


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """--topo, --k, --spines, --leaves, --hosts-per-leaf, --aggregation."""
    parser.add_argument("--topo", choices=TOPOS, default="star",
                        help="star: one switch, N x J hosts; leaf-spine, fat-tree: multi-tier "
                             "(default star)")
    parser.add_argument("--k", type=int, default=4, metavar="K", dest="fat_k",
                        help=f"fat-tree arity, even, 2..{MAX_FAT_TREE_K} (Mininet "
                             f"2..{MAX_MININET_FAT_TREE_K}): K^3/4 hosts (default 4)")
    parser.add_argument("--spines", type=int, default=2, metavar="S",
                        help="leaf-spine: spine switches (default 2)")
    parser.add_argument("--leaves", type=int, default=2, metavar="L",
                        help="leaf-spine: leaf switches (default 2)")
    parser.add_argument("--hosts-per-leaf", type=int, default=2, metavar="H",
                        help="leaf-spine: hosts on each leaf (default 2)")
    parser.add_argument("--aggregation", choices=AGGREGATIONS, default=None,
                        help="INA: aggregate along a tree over every tier, or at one switch "
                             "(default: tree on leaf-spine and fat-tree, single on a star)")


def add_ina_arguments(parser: argparse.ArgumentParser) -> None:
    """--elems, --pool, --window, --rto, --format, --scaling, --divisor."""
    parser.add_argument("--elems", type=int, default=DEFAULT_ELEMS, metavar="K",
                        help=f"values per aggregation packet, INA_K, a multiple of 4 up to "
                             f"{MAX_K} (default {DEFAULT_ELEMS}: a packet fills a 1500-byte "
                             f"MTU, as the ring's TCP segments do)")
    parser.add_argument("--pool", type=int, default=None, metavar="SLOTS",
                        help="aggregator slots of each job (default 128, or the largest power "
                             "of two whose cells every job gets on one switch: 64 from 8 jobs)")
    parser.add_argument("--window", type=int, default=None, metavar="CHUNKS",
                        help="INA chunks in flight per worker, at most --pool (default: about "
                             "1024 per switch over all workers, at least 16: the whole pool for "
                             "4 or 8 workers, 64 for 16, 16 from 64)")
    parser.add_argument("--rto", type=float, default=0.1, metavar="SECONDS",
                        help="INA first retransmission timeout, doubling up to 4x (default 0.1)")
    parser.add_argument("--format", choices=LANE_FORMATS, default="int32", dest="lane_format",
                        help="INA lanes: int32, or 2 int16 / 4 int8 values per 32-bit lane "
                             "(docs/formats.md; default int32)")
    parser.add_argument("--scaling", choices=SCALINGS, default="job",
                        help="INA quantization: one scale per call (job) or per packet "
                             "(block, maxima agreed in the switch; default job)")
    parser.add_argument("--divisor", type=int, default=None, metavar="D",
                        help="INA int16/int8: quantize for sums of D workers, not all n; "
                             "chunks whose sums overflow are flagged by the switch and redone "
                             "(docs/formats.md; default n: never overflows)")
