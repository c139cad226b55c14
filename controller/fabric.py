"""P4Runtime sessions with every switch of a topology at once.

The topology says where each switch listens (127.0.0.1:`grpc_port` by default, or the address
given for it in `addresses`, e.g. its server's in a cluster) and its device id; `tls` makes every
session TLS (controller/tls.py); switches served in this process (the simulator) are reached through the channels given instead
(`channels`: name -> `p4switch.server.LocalChannel`, P4Runtime without gRPC's transport).
`Fabric` opens one `SwitchClient` per switch, pushes one program to all of them, installs the
routes computed from the same topology (ECMP groups where there are equal-cost paths and the
program has them), and collects counters. Progress goes to an optional
callback (the CLI prints it), never to stdout from the library.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Mapping

from controller.client import SwitchClient
from controller.errors import ConnectionFailed, ControllerError
from controller.p4info import P4InfoIndex
from controller.reroute import RerouteSummary, replace_routes
from controller.routing import (L3_FORWARD, L3_FORWARD_ARP, FloodProgram, L3Program,
                                flood_groups, forwarding_plans, plan_entries)
from controller.tls import ClientTLS
from topologies.model import Topology

Progress = Callable[[str], None]
CONNECT_THREADS = 4      # sessions opened at once (more only contend for the GIL)


def _quiet(_: str) -> None:
    pass


class Fabric:
    """One primary session per switch. Use as a context manager; `close()` ends every session."""

    def __init__(self, topology: Topology, *, grpc_host: str = "127.0.0.1",
                 election_id: tuple[int, int] = (0, 1), timeout: float = 10.0,
                 progress: Progress = _quiet, channels: Mapping[str, object] | None = None,
                 addresses: Mapping[str, str] | None = None, tls: ClientTLS | None = None):
        self.topology = topology
        self.progress = progress
        self.clients: dict[str, SwitchClient] = {}
        if tls is not None:
            tls.check()              # a bad file is one error, before any connection

        def where(switch) -> str:
            if channels is not None:
                return "in process"
            return (addresses or {}).get(switch.name) or f"{grpc_host}:{switch.grpc_port}"

        def connect(switch) -> SwitchClient:
            channel = None
            if channels is not None:
                channel = channels.get(switch.name)
                if channel is None:
                    raise ConnectionFailed(f"{switch.name}: no in-process channel to it")
            return SwitchClient(switch.name, where(switch), switch.device_id,
                                election_id=election_id, timeout=timeout, channel=channel,
                                tls=None if channels is not None else tls)

        # Concurrently: each connection mostly waits (over gRPC: channel, stream, arbitration
        # round trip, 4 ms a switch one after the other; in process: the stream's threads
        # starting and handing the arbitration over, which a busy machine makes slow).
        # Sessions are kept in topology order; on a failure every session opened is closed
        # and the first failure in that order is raised.
        switches = list(topology.switches)
        with ThreadPoolExecutor(max_workers=max(1, min(CONNECT_THREADS, len(switches))),
                                thread_name_prefix="fabric-connect") as pool:
            futures = [pool.submit(connect, switch) for switch in switches]
        outcomes = []
        for future in futures:
            try:
                outcomes.append((future.result(), None))
            except BaseException as error:
                outcomes.append((None, error))
        failure = None
        for switch, (client, error) in zip(switches, outcomes):
            if error is not None:
                failure = failure or error
            else:
                self.clients[switch.name] = client
                over = f", {tls.describe()}" if tls is not None and channels is None else ""
                progress(f"{switch.name}: connected {'' if channels is not None else 'to '}"
                         f"{where(switch)} (device {switch.device_id}{over})")
        if failure is not None:
            self.close()
            raise failure

    def __enter__(self) -> "Fabric":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End every session: all streams asked to end first, then each waited for."""
        for client in self.clients.values():
            client.end_stream()
        for client in self.clients.values():
            client.close()
        self.clients.clear()

    def __getitem__(self, switch: str) -> SwitchClient:
        try:
            return self.clients[switch]
        except KeyError:
            raise ControllerError(f"no session with switch {switch!r}") from None

    def push_pipeline(self, p4info_path: str | Path, json_path: str | Path) -> None:
        """The same program on every switch."""
        index = P4InfoIndex.from_file(p4info_path)
        try:
            config = Path(json_path).read_bytes()
        except OSError as e:
            raise ControllerError(f"{json_path}: cannot read: {e.strerror}") from None
        for name, client in self.clients.items():
            client.set_pipeline(index, config)
            self.progress(f"{name}: pipeline set ({Path(json_path).name}, {len(config)} bytes)")

    def adopt_pipeline(self) -> None:
        """Learn each switch's running P4Info (when another process pushed the program)."""
        for client in self.clients.values():
            client.fetch_p4info()

    def install_routes(self, program: L3Program = L3_FORWARD, *, ecmp: bool = True,
                       aggregate: bool = False) -> int:
        """A /32 route to every host on every switch, or with `aggregate` the fewest prefixes
        that forward each host the same way (controller/prefixes.py); returns how many routes
        (LPM entries) were written. Where a switch has several shortest next hops and the program offers ECMP (and
        `ecmp` is left on), the route uses an ECMP group, whose members are written first so no
        route ever points at a missing member; otherwise the lowest-port next hop."""
        total = 0
        made: dict = {}          # entries shared by several switches are built once
        for switch, plan in forwarding_plans(self.topology, aggregate).items():
            client = self[switch]
            index = client.index
            if index is None:
                raise ControllerError(f"{switch}: push or adopt a pipeline before installing routes")
            planned = plan_entries(program, index, plan, ecmp=ecmp, made=made)
            client.insert_table_entries(planned.members, planned.member_labels)
            total += client.insert_table_entries(planned.routes, planned.route_labels)
            detail = (f", {planned.groups} ECMP groups ({len(planned.members)} members)"
                      if planned.groups else "")
            self.progress(f"{switch}: {len(planned.routes)} routes installed in "
                          f"{program.table}{detail}")
        return total

    def replace_routes(self, topology_now: Topology, program: L3Program = L3_FORWARD, *,
                       aggregate: bool = True, ecmp: bool = True,
                       addresses: Mapping[str, str] = {},
                       tree_addresses: Mapping[str, str] = {}) -> "RerouteSummary":
        """Make every connected switch forward as `install_routes` would on `topology_now`
        (a topology after failures, topologies/degraded.py), writing only the difference:
        `controller.reroute.replace_routes` over this fabric's sessions."""
        summary = replace_routes(self.clients, topology_now, program, aggregate=aggregate,
                                 ecmp=ecmp, addresses=addresses, tree_addresses=tree_addresses)
        for switch, changes in summary.items():
            if changes.total:
                self.progress(f"{switch}: {changes}")
        return summary

    def install_flooding(self, program: FloodProgram = L3_FORWARD_ARP) -> int:
        """Per switch, one multicast group per port (the other ports) and the entry that uses it."""
        total = 0
        for switch, groups in flood_groups(self.topology).items():
            client = self[switch]
            if client.index is None:
                raise ControllerError(f"{switch}: push or adopt a pipeline before installing flooding")
            for ingress, others in groups.items():
                client.set_multicast_group(ingress, [(port, 0) for port in others])
            entries = [program.entry(client.index, ingress) for ingress in groups]
            total += client.insert_table_entries(entries, [f"flood from port {p}" for p in groups])
            self.progress(f"{switch}: {len(groups)} flood groups written")
        return total

    def read_counter(self, name: str) -> dict[str, dict[int, tuple[int, int]]]:
        """switch -> index -> (packets, bytes), for every cell of the counter on every switch."""
        return {switch: client.read_counter(name) for switch, client in self.clients.items()}
