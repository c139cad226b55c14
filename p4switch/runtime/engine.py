"""simple_switch's packet flow around the compiled pipeline.

One received packet is run to completion:
  parse (+ verify checksums) -> ingress -> I2E clone? -> resubmit? | multicast | unicast | drop
  -> egress per copy -> E2E clone? -> drop? -> deparse (+ update checksums) -> recirculate? | out
following BMv2's ordering: an ingress clone is the packet as it arrived (re-parsed, metadata
reset, its field list copied over) and is queued before the original; multicast replicas carry
instance type 5 and their egress_rid; resubmitted packets go back through ingress with the
original bytes, recirculated ones with the deparsed bytes. Loops are bounded (BMv2 would spin).
"""

from __future__ import annotations

from collections import deque

from . import layout as L
from .primgen import DROP_PORT

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
MAX_INGRESS_PASSES = 64    # resubmits + recirculations of one received packet
MAX_EGRESS_COPIES = 4096   # egress runs for one received packet (replicas and clones)
MASK48 = (1 << 48) - 1
MASK32 = (1 << 32) - 1


class Engine:
    def __init__(self, program, replication, code, trace=None):
        self.program = program
        self.pre = replication
        self.code = code
        self.trace = trace
        layout = program.layout
        self.init_fields, self.init_valid = layout.initial_state()
        def std(name: str) -> int:
            slot = layout.std(name)
            return layout.scratch if slot is None else slot
        self.ingress_port = std("ingress_port")
        self.egress_spec = std("egress_spec")
        self.egress_port = std("egress_port")
        self.instance_type = std("instance_type")
        self.packet_length = std("packet_length")
        self.mcast_grp = layout.std("mcast_grp")
        self.egress_rid = std("egress_rid")
        self.ingress_ts = std("ingress_global_timestamp")
        self.egress_ts = std("egress_global_timestamp")
        self.enq_ts = std("enq_timestamp")
        self.deq_timedelta = std("deq_timedelta")
        if layout.std("egress_spec") is None or layout.std("ingress_port") is None:
            from .errors import ConfigError
            raise ConfigError("headers", "the program needs standard_metadata with ingress_port "
                              "and egress_spec")
        self.metadata_slots = [slot for h in layout.header_list if h.metadata
                               for slot in range(h.base, h.base + len(h.htype.fields))]
        self.packet_count = 0

    # ----------------------------------------------------------------------------- helpers
    def _preserved(self, f, field_list_id: int) -> list[tuple[int, int]]:
        return [(slot, f[slot]) for slot in self.program.field_lists.get(field_list_id, ())]

    def _reset_metadata(self, f) -> None:
        for slot in self.metadata_slots:
            f[slot] = 0

    # ---------------------------------------------------------------------------- the flow
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        outputs: list[tuple[int, bytes]] = []
        code = self.code
        trace = self.trace
        self.packet_count += 1
        if trace is not None:
            trace.packet_in(self.packet_count, port, data)
        ingress_queue = deque([(data, NORMAL, ())])
        passes = 0
        while ingress_queue:
            data, instance_type, preserved = ingress_queue.popleft()
            passes += 1
            if passes > MAX_INGRESS_PASSES:
                if trace is not None:
                    trace.drop("too many resubmit/recirculate passes")
                break
            f = self.init_fields[:]
            v = self.init_valid[:]
            f[self.ingress_port] = port
            now = int(self.program.now_us())
            f[self.packet_length] = len(data)
            f[self.instance_type] = instance_type
            f[self.ingress_ts] = now & MASK48
            for slot, value in preserved:
                f[slot] = value
            if trace is not None:
                trace.pipeline("ingress", instance_type)
            pos = code.parse(f, v, data)
            payload = data[pos:]
            code.ingress(f, v)
            copies = self._after_ingress(f, v, data, payload, port, ingress_queue)
            if copies:
                self._egress(copies, outputs, ingress_queue, port)
        if trace is not None:
            trace.packet_done(outputs)
        return outputs

    def _after_ingress(self, f, v, data, payload, port, ingress_queue) -> list:
        trace = self.trace
        copies = []  # (f, v, payload, egress port, rid, length)
        length = len(data)
        if f[L.CLONE]:
            session = f[L.CLONE] - 1
            field_list = f[L.CLONE_FL]
            f[L.CLONE] = f[L.CLONE_FL] = 0
            config = self.pre.mirrors.get(session)
            if config is None:
                if trace is not None:
                    trace.note(f"clone to unconfigured session {session} ignored")
            else:
                cf = self.init_fields[:]
                cv = self.init_valid[:]
                cpos = self.code.parse(cf, cv, data)
                self._reset_metadata(cf)
                for slot, value in self._preserved(f, field_list):
                    cf[slot] = value
                cf[self.ingress_port] = port
                cf[self.instance_type] = INGRESS_CLONE
                if trace is not None:
                    trace.clone("ingress-to-egress", session, config)
                copies += self._mirror_targets(cf, cv, data[cpos:], config, length)
        if f[L.RESUBMIT]:
            field_list = f[L.RESUBMIT] - 1
            if trace is not None:
                trace.note("resubmit")
            ingress_queue.append((data, RESUBMIT, self._preserved(f, field_list)))
            return copies
        mgid = f[self.mcast_grp] if self.mcast_grp is not None else 0
        if mgid:
            replicas = self.pre.replicas(mgid)
            f[self.instance_type] = REPLICATION
            if trace is not None:
                trace.multicast(mgid, replicas)
            for rport, rid in replicas:
                copies.append((f[:], v[:], payload, rport, rid, length))
            return copies
        egress_spec = f[self.egress_spec]
        if egress_spec == DROP_PORT:
            if trace is not None:
                trace.drop("egress_spec is the drop port at the end of ingress")
            return copies
        copies.append((f, v, payload, egress_spec, 0, length))
        return copies

    def _mirror_targets(self, f, v, payload, config, length) -> list:
        targets = []
        if config.get("mgid"):
            for rport, rid in self.pre.replicas(config["mgid"]):
                targets.append((f[:], v[:], payload, rport, rid, length))
        if config.get("port") is not None:
            targets.append((f, v, payload, config["port"], 0, length))
        return targets

    def _egress(self, copies, outputs, ingress_queue, port) -> None:
        code = self.code
        trace = self.trace
        queue = deque(copies)
        runs = 0
        while queue:
            f, v, payload, eport, rid, length = queue.popleft()
            runs += 1
            if runs > MAX_EGRESS_COPIES:
                if trace is not None:
                    trace.drop("too many egress copies")
                return
            now = int(self.program.now_us())
            f[self.egress_port] = eport
            f[self.egress_spec] = 0
            f[self.egress_rid] = rid
            f[self.packet_length] = length
            f[self.egress_ts] = now & MASK48
            f[self.enq_ts] = now & MASK32
            f[self.deq_timedelta] = 0
            f[L.EXIT] = 0
            if trace is not None:
                trace.pipeline("egress", f[self.instance_type], eport, rid)
            code.egress(f, v)
            if f[L.CLONE]:
                session = f[L.CLONE] - 1
                field_list = f[L.CLONE_FL]
                f[L.CLONE] = f[L.CLONE_FL] = 0
                config = self.pre.mirrors.get(session)
                if config is not None:
                    cf = f[:]
                    self._reset_metadata(cf)
                    for slot, value in self._preserved(f, field_list):
                        cf[slot] = value
                    cf[self.ingress_port] = port
                    cf[self.instance_type] = EGRESS_CLONE
                    if trace is not None:
                        trace.clone("egress-to-egress", session, config)
                    queue.extend(self._mirror_targets(cf, v[:], payload, config, length))
            if f[self.egress_spec] == DROP_PORT:
                if trace is not None:
                    trace.drop("egress_spec is the drop port at the end of egress")
                continue
            out = code.deparse(f, v, payload)
            if f[L.RECIRCULATE]:
                field_list = f[L.RECIRCULATE] - 1
                if trace is not None:
                    trace.note("recirculate")
                ingress_queue.append((out, RECIRC, self._preserved(f, field_list)))
                continue
            if f[L.TRUNCATE]:
                out = out[:f[L.TRUNCATE] - 1]
            if eport == DROP_PORT:
                if trace is not None:
                    trace.drop("egress port is the drop port")
                continue
            if trace is not None:
                trace.packet_out(eport, out)
            outputs.append((eport, out))
