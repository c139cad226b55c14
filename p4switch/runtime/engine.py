"""simple_switch's packet flow around the compiled pipeline.

One received packet is run to completion:
  parse (+ verify checksums) -> ingress -> I2E clone? -> resubmit? | multicast | unicast | drop
  -> egress per copy -> E2E clone? -> drop? -> deparse (+ update checksums) -> recirculate? | out
following BMv2's ordering: an ingress clone is the packet as it arrived (re-parsed, metadata
reset, its field list copied over) and is queued before the original; multicast replicas carry
instance type 5 and their egress_rid; resubmitted packets go back through ingress with the
original bytes, recirculated ones with the deparsed bytes. Loops are bounded (BMv2 would spin).

Between ingress and egress every copy passes its egress queue (queues.py). Without a drain rate
the queue is always empty and the copy goes on at once; with one it may wait there, and
`release(now)` runs its egress when it is due (the driver's timer, the simulator's clock, or
the next `process`, which first lets out what is due so a new packet sees the depth of now).
"""

from __future__ import annotations

from collections import deque

from .phv import layout as L
from .phv.vheaders import all_runs
from .cgen.nativefast import native_fast_path
from .pygen.fastpath import (build_clear_invalid, build_fast_path, build_length_after_ingress,
                             may_read_slot)
from .pygen.primgen import DROP_PORT
from .state.queues import DROPPED, QUEUED, EgressQueues

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
MAX_INGRESS_PASSES = 64    # resubmits + recirculations of one received packet
MAX_EGRESS_COPIES = 4096   # egress runs for one received packet (replicas and clones)
MASK48 = (1 << 48) - 1
MASK32 = (1 << 32) - 1
US_ROUNDING = 1e-6   # in us: 50.01 s - 50 s is 9999.99999999 us in floats; count it as 10000


def phv_length(program, code) -> int:
    """Slots of `f` the code needs: all of them, except that when the untraced code keeps
    the last header's lane fields as a vector run (an array in the run's first slot, the
    layout puts such headers last), the PHV ends with that slot."""
    total = program.layout.num_slots
    if code is not program.untraced or not program.vector_runs:
        return total
    last = max(all_runs(program.vector_runs), key=lambda run: run.first)
    return last.first + 1 if last.first + last.count == total else total


class Engine:
    # (slots: the native core reads and writes them at their offsets,
    # inaemu/sim/native/attrs.c; a dict too, for what callers attach or patch on an engine)
    __slots__ = ('program', 'pre', 'queues', 'code', 'trace', 'init_fields', 'init_valid',
                 'ingress_port', 'egress_spec', 'egress_port', 'instance_type', 'packet_length',
                 'ingress_length', 'mcast_grp', 'egress_rid', 'ingress_ts', 'egress_ts', 'enq_ts',
                 'deq_timedelta', 'enq_qdepth', 'deq_qdepth', 'qid', 'priority', 'metadata_slots',
                 'packet_count', 'length_after_ingress', 'clear_invalid', 'egress_reads_length',
                 'reads_time', 'fast', 'entry', 'fast_queued', '__dict__')

    def __init__(self, program, replication, code, trace=None, queues=None):
        self.program = program
        self.pre = replication
        self.queues = queues if queues is not None else EgressQueues()
        self.code = code
        self.trace = trace
        layout = program.layout
        self.init_fields, self.init_valid = layout.initial_state()
        self.init_fields = self.init_fields[:phv_length(program, code)]

        def std(name: str) -> int:  # a field the program lacks is written to a scratch slot
            slot = layout.std(name)
            return layout.scratch if slot is None else slot

        self.ingress_port = std("ingress_port")
        self.egress_spec = std("egress_spec")
        self.egress_port = std("egress_port")
        self.instance_type = std("instance_type")
        self.packet_length = std("packet_length")
        self.ingress_length = layout.ingress_length   # counted by counters and byte meters
        self.mcast_grp = layout.std("mcast_grp")
        self.egress_rid = std("egress_rid")
        self.ingress_ts = std("ingress_global_timestamp")
        self.egress_ts = std("egress_global_timestamp")
        self.enq_ts = std("enq_timestamp")
        self.deq_timedelta = std("deq_timedelta")
        self.enq_qdepth = std("enq_qdepth")
        self.deq_qdepth = std("deq_qdepth")
        self.qid = std("qid")
        self.priority = layout.std("priority")     # None: every packet has priority 0
        length = len(self.init_fields)
        self.metadata_slots = [slot for h in layout.header_list if h.metadata
                               for slot in range(h.base, h.base + len(h.htype.fields))
                               if slot < length]
        self.packet_count = 0
        self.learn_handler = None   # learning.LearnHandler: where samples go (Switch sets it)
        self.length_after_ingress = build_length_after_ingress(layout)
        self.clear_invalid = build_clear_invalid(layout, length)   # before replication
        # egress, the deparser or a preserved field list may see packet_length
        self.egress_reads_length = may_read_slot(
            code.source, ("egress", "deparse", "deparse_replica"), self.packet_length) or \
            any(self.packet_length in slots for slots in program.field_lists.values())
        # whether any code (or a field list a clone or recirculation carries) can see a
        # timestamp: if not, the fast path does not read the clock (slots stay 0, unseen)
        listed = {slot for slots in program.field_lists.values() for slot in slots}
        listed.update(slot for ll in program.learn_lists.values() for slot in ll.slots)
        roots = ("parse", "ingress", "egress", "deparse", "deparse_replica")
        self.reads_time = any(
            slot in listed or may_read_slot(code.source, roots, slot)
            for slot in (self.ingress_ts, self.egress_ts, self.enq_ts, self.deq_timedelta)
            if slot != layout.scratch)
        self.fast = build_fast_path(self)
        # what a packet on the common path runs: `fast`, or the same flow as one C call
        self.entry = native_fast_path(self, self.fast) or self.fast
        self.fast_queued = build_fast_path(self, queued=True)

    # ----------------------------------------------------------------------------- helpers
    def _preserved(self, f, field_list_id: int) -> list[tuple[int, int]]:
        return [(slot, f[slot]) for slot in self.program.field_lists.get(field_list_id, ())]

    def _reset_metadata(self, f) -> None:
        for slot in self.metadata_slots:
            f[slot] = 0

    # ---------------------------------------------------------------------------- the flow
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Every packet that leaves the switch for one received packet, in emission order.

        With egress queues in use, packets whose departure is due by now leave first (so the
        new packet finds the queues as they are now); its own copies may wait in a queue."""
        trace = self.trace
        self.packet_count += 1
        queueing = self.queues.active
        if trace is None:
            if not queueing:
                return self.entry(port, data)
            due = self.queues.next_due()
            if due is None or due > self.program.clock():
                return self.fast_queued(port, data)
            return self.release(self.program.clock()) + self.fast_queued(port, data)
        outputs: list[tuple[int, bytes]] = self.release(self.program.clock()) if queueing \
            else []
        if trace is not None:
            trace.packet_in(self.packet_count, port, data)
        self._run(deque([(data, NORMAL, ())]), outputs, port)
        if trace is not None:
            trace.packet_done(outputs)
        return outputs

    def release(self, now: float) -> list[tuple[int, bytes]]:
        """Run egress for every queued packet whose departure time is due by `now` (clock
        seconds), at its departure time, and return what leaves the switch."""
        outputs: list[tuple[int, bytes]] = []
        queues, origin, trace = self.queues, self.program.clock_origin, self.trace
        while True:
            due = queues.pop_due(now)
            if due is None:
                return outputs
            departure, eport, priority, item, left = due
            f, v, payload, rid, length, port, enq_us = item
            deq_us = (departure - origin) * 1e6 + US_ROUNDING
            f[self.deq_timedelta] = (int(deq_us) - enq_us) & MASK32
            f[self.deq_qdepth] = left
            f[self.qid] = priority
            if trace is not None:
                trace.note(f"dequeued from port {eport} queue {priority} ({left} left)")
            ingress_queue: deque = deque()
            self._egress([(f, v, payload, eport, rid, length)], outputs, ingress_queue, port,
                         admitted_us=deq_us)
            self._run(ingress_queue, outputs, port, passes=1)

    def _run(self, ingress_queue: deque, outputs: list, port: int, passes: int = 0) -> None:
        """The general flow: ingress passes (resubmit, recirculation) and their egress copies."""
        code = self.code
        trace = self.trace
        while ingress_queue:
            data, instance_type, preserved = ingress_queue.popleft()
            passes += 1
            if passes > MAX_INGRESS_PASSES:
                if trace is not None:
                    trace.drop("too many resubmit/recirculate passes")
                return
            f = self.init_fields[:]
            v = self.init_valid[:]
            if instance_type == NORMAL:
                # BMv2 sets these only for packets from a port; a resubmitted or recirculated
                # packet starts with all metadata reset except its field list
                f[self.ingress_port] = port
                f[self.ingress_ts] = int(self.program.now_us()) & MASK48
            f[self.packet_length] = f[self.ingress_length] = len(data)
            f[self.instance_type] = instance_type
            for slot, value in preserved:
                f[slot] = value
            if trace is not None:
                trace.pipeline("ingress", instance_type)
            pos = code.parse(f, v, data)
            code.ingress(f, v)
            copies = self._after_ingress(f, v, data, data[pos:], port, ingress_queue)
            if copies:
                self._egress(copies, outputs, ingress_queue, port)

    # The common case (one ingress pass, unicast or multicast, no clone, no recirculation)
    # runs in a function generated for the program's slots (fastpath.py); anything else hands
    # over to the general flow at the point where it diverges.
    def slow_after_ingress(self, f, v, data, pos, port):
        outputs: list[tuple[int, bytes]] = []
        ingress_queue: deque = deque()
        copies = self._after_ingress(f, v, data, data[pos:], port, ingress_queue)
        if copies:
            self._egress(copies, outputs, ingress_queue, port)
        self._run(ingress_queue, outputs, port, passes=1)
        return outputs

    def slow_after_egress(self, f, v, payload, eport, length, port):
        outputs: list[tuple[int, bytes]] = []
        ingress_queue: deque = deque()
        self._egress([(f, v, payload, eport, 0, length)], outputs, ingress_queue, port,
                     egress_done=True)
        self._run(ingress_queue, outputs, port, passes=1)
        return outputs

    def slow_after_replica(self, f, v, base_f, base_v, payload, eport, rid, length, port,
                           rest):
        """The general flow from a multicast replica whose egress diverged (clone, recirculate,
        truncate, drop): it and the replicas after it (`rest`, copied from `base_f`/`base_v`)."""
        outputs: list[tuple[int, bytes]] = []
        ingress_queue: deque = deque()
        copies = [(f, v, payload, eport, rid, length)]
        copies += [(base_f[:], base_v[:], payload, rport, rrid, length) for rport, rrid in rest]
        self._egress(copies, outputs, ingress_queue, port, egress_done=True)
        self._run(ingress_queue, outputs, port, passes=1)
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
                cf[self.ingress_port] = port  # the parser may branch on it (as in BMv2)
                cpos = self.code.parse(cf, cv, data)
                self._reset_metadata(cf)      # then all metadata is reset, ingress_port too
                cf[self.ingress_length] = length
                for slot, value in self._preserved(f, field_list):
                    cf[slot] = value
                cf[self.instance_type] = INGRESS_CLONE
                if trace is not None:
                    trace.clone("ingress-to-egress", session, config)
                copies += self._mirror_targets(cf, cv, data[cpos:], config, length)
        if f[L.LEARN]:      # simple_switch learns after the ingress clone, before a resubmit
            self._learn(f, v)
        if f[L.RESUBMIT]:
            field_list = f[L.RESUBMIT] - 1
            if trace is not None:
                trace.note("resubmit")
            ingress_queue.append((data, RESUBMIT, self._preserved(f, field_list)))
            return copies
        # clones above keep the length as received; the packet itself goes on with its
        # length after ingress (simple_switch: the valid headers plus the payload)
        if self.egress_reads_length:
            length = self.length_after_ingress(f, v, len(payload))
        mgid = f[self.mcast_grp] if self.mcast_grp is not None else 0
        if mgid:
            replicas = self.pre.replicas(mgid)
            f[self.instance_type] = REPLICATION
            self.clear_invalid(f, v)   # replicas get only the valid headers (as in BMv2)
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
        f[self.instance_type] = NORMAL  # BMv2: even a resubmitted/recirculated packet
        copies.append((f, v, payload, egress_spec, 0, length))
        return copies

    def _learn(self, f, v) -> None:
        learn_list = self.program.learn_lists[f[L.LEARN]]
        f[L.LEARN] = 0
        sample = learn_list.sample(f, v)
        if self.trace is not None:
            self.trace.note(f"digest: learn list {learn_list.list_id} ({learn_list.name}), "
                            f"sample {sample.hex()}")
        handler = self.learn_handler
        if handler is not None:
            handler(learn_list, sample)

    def _admit(self, f, v, payload, eport, rid, length, port) -> float | None:
        """Offer a copy to its egress queue (BMv2's enqueue): the time in us at which it runs
        egress now, or None when it waits in the queue or is dropped (queue full, priority
        beyond the number of queues). Sets the enqueue metadata, and the dequeue metadata
        of a copy that leaves at once."""
        queues, program = self.queues, self.program
        priority = f[self.priority] if self.priority is not None else 0
        now = program.clock()
        now_us = (now - program.clock_origin) * 1e6 + US_ROUNDING
        enq_us = int(now_us)
        f[self.enq_ts] = enq_us & MASK32
        if not queues.active and priority < queues.priorities:
            found = 0              # nothing waits anywhere: the copy goes straight through
        else:
            verdict, found = queues.enqueue(eport, priority, now,
                                            (f, v, payload, rid, length, port, enq_us))
            if verdict == DROPPED:
                if self.trace is not None:
                    self.trace.drop(f"priority {priority} but {queues.priorities} queue(s) "
                                    "per port" if priority >= queues.priorities else
                                    f"egress queue of port {eport} full")
                return None
            f[self.enq_qdepth] = found
            if verdict == QUEUED:
                if self.trace is not None:
                    self.trace.note(f"enqueued on port {eport} queue {priority} "
                                    f"(depth {found})")
                return None
        f[self.enq_qdepth] = found
        f[self.deq_qdepth] = found
        f[self.deq_timedelta] = 0
        f[self.qid] = priority
        return now_us

    def _run_egress(self, f, v, eport, rid, length, now_us: float) -> None:
        f[self.egress_port] = eport
        f[self.egress_spec] = 0
        f[self.egress_rid] = rid
        f[self.packet_length] = length
        f[self.egress_ts] = int(now_us) & MASK48
        f[L.EXIT] = 0
        if self.trace is not None:
            self.trace.pipeline("egress", f[self.instance_type], eport, rid)
        self.code.egress(f, v)

    def _mirror_targets(self, f, v, payload, config, length) -> list:
        targets = []
        if config.get("mgid"):
            for rport, rid in self.pre.replicas(config["mgid"]):
                targets.append((f[:], v[:], payload, rport, rid, length))
        if config.get("port") is not None:
            targets.append((f, v, payload, config["port"], 0, length))
        return targets

    def _egress(self, copies, outputs, ingress_queue, port, egress_done: bool = False,
                admitted_us: float | None = None) -> None:
        """Each copy through its egress queue, then egress, E2E clones, drops, deparsing,
        recirculation, output.

        `egress_done`: the first copy already ran the egress control (the fast path).
        `admitted_us`: the first copy left its queue at that time (queue metadata set)."""
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
            if egress_done:
                egress_done = False
            else:
                if admitted_us is not None:
                    now_us, admitted_us = admitted_us, None
                else:
                    now_us = self._admit(f, v, payload, eport, rid, length, port)
                    if now_us is None:
                        continue
                self._run_egress(f, v, eport, rid, length, now_us)
            if f[L.CLONE]:
                session = f[L.CLONE] - 1
                field_list = f[L.CLONE_FL]
                f[L.CLONE] = f[L.CLONE_FL] = 0
                config = self.pre.mirrors.get(session)
                if config is not None:
                    cf = f[:]
                    self.clear_invalid(cf, v)   # only valid headers are copied (as in BMv2)
                    self._reset_metadata(cf)
                    for slot, value in self._preserved(f, field_list):
                        cf[slot] = value
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
