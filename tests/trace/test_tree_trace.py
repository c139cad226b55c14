"""Lifecycles across a tree of three ina.p4 switches (two child aggregators under a parent),
traced in-process through a lossy network (tests/ina/netsim.py): the child and parent steps are
recognised from the real program's actions, not from hand-made ones."""

from __future__ import annotations

import io
import itertools

from inaemu.trace.lifecycle import (COMPLETED, CONTRIBUTION, DUPLICATE, PARENT_RESULT, build)
from inaemu.trace.reader import parse_log
from p4switch.runtime import TextTrace
from tests.ina.netsim import LossyNet, ProtocolWorker, add_job, add_route, maxima_for, new_switch
from tests.ina.packets import Endpoint, ip

K, POOL, JOB, CHUNKS = 4, 4, 21, 6


def _traced_tree(seed: int, loss: float) -> dict[str, str]:
    ticks = itertools.count()
    clock = lambda: next(ticks) * 1e-3                        # noqa: E731 - one shared clock
    logs = {name: io.StringIO() for name in ("top", "leaf0", "leaf1")}
    parent = Endpoint(0x000000000F00, ip("10.0.100.254"))
    children = [Endpoint(0x000000000A00, ip("10.0.1.254")),
                Endpoint(0x000000000B00, ip("10.0.2.254"))]
    net = LossyNet(seed, loss=loss)
    top = new_switch(K, parent)
    add_job(top, parent, JOB, base=0, pool=POOL, result_count=4,
            members=[(1, children[0]), (2, children[1])])
    net.switches["top"] = top
    for c, child in enumerate(children):
        leaf = new_switch(K, child)
        hosts = [Endpoint(0x080000000000 + 16 * c + w, ip(f"10.0.{c + 1}.{w + 1}"))
                 for w in range(2)]
        add_job(leaf, child, JOB, base=10 + 2 * c, pool=POOL, result_count=4, parent=parent,
                child_index=c, members=[(w + 1, h) for w, h in enumerate(hosts)])
        add_route(leaf, parent.addr & 0xFFFFFF00, 24, parent.mac, 9)
        net.switches[f"leaf{c}"] = leaf
        net.link((f"leaf{c}", 9), ("top", c + 1))
        for w, host in enumerate(hosts):
            vector = [(2 * c + w + 1) * 1000 + i for i in range(CHUNKS * K)]
            net.workers[f"w{2 * c + w}"] = ProtocolWorker(w, host, child, JOB, POOL, K, [vector],
                                                          maxima_for([vector]))
            net.link((f"w{2 * c + w}", 0), (f"leaf{c}", w + 1))
    for name, switch in net.switches.items():
        switch.trace = TextTrace(logs[name], clock=clock)
    net.run()
    assert net.dropped > 0
    return {name: log.getvalue() for name, log in logs.items()}


def test_tree_lifecycles_show_partials_going_up_and_results_coming_down():
    logs = _traced_tree(seed=5, loss=0.2)
    events = sorted((e for name, text in logs.items()
                     for e in parse_log(text.splitlines(), name)), key=lambda e: e.time)
    lifecycles = build(events, set(logs))
    assert len(lifecycles) == CHUNKS + 1                       # and the MAX round
    climbed = 0
    for life in lifecycles:
        at = {name: [s for s in life.steps if s.switch == name] for name in logs}
        for name in ("top", "leaf0", "leaf1"):
            accepted = [s for s in at[name] if s.what in (CONTRIBUTION, COMPLETED)]
            assert sorted(s.worker for s in accepted) == [0, 1], (name, life)
            completed = [s for s in at[name] if s.what == COMPLETED]
            assert len(completed) == 1
            if name == "top":
                assert "multicast" in completed[0].detail
                assert [p for p, _ in completed[0].outputs] == [1, 2]
            else:
                assert "parent" in completed[0].detail and completed[0].outputs[0][0] == 9
                results = [s for s in at[name] if s.what == PARENT_RESULT]
                assert len(results) == 1 and results[0].time > completed[0].time
                assert [p for p, _ in results[0].outputs] == [1, 2]
        climbed += sum(1 for s in life.steps
                       if s.what == DUPLICATE and "sent up again" in s.detail)
    assert climbed > 0                                          # a retransmission climbed
