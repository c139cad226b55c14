"""Which Mininet network runs a topology: `MininetNetwork` on this machine, or
`ClusterNetwork` (its subclass, topologies/cluster.py) over several servers (docs/cluster.md).

    with mininet_network(topology, servers=["localhost", "server2"], ssh_config=None) as net:

Both classes import Mininet, so this module imports them only when called (callers without root
can import it); it imports the cluster edition only when `servers` are given.
"""

from __future__ import annotations

from topologies.model import Topology


def mininet_network(topology: Topology, *, servers=None, **options):
    """A `ClusterNetwork` over `servers` when some are given (then `options` may also hold its
    `ssh_config`, `tunnel` and `placement`), else a `MininetNetwork`; not started. `options`:
    the keyword arguments of `MininetNetwork` (target, run_dir, trace, pcap, seed,
    ready_timeout)."""
    if servers:
        from topologies.cluster import ClusterNetwork
        return ClusterNetwork(topology, servers=servers, **options)
    from topologies.mininet_net import MininetNetwork
    return MininetNetwork(topology, **options)
