"""`digest` as p4c's BMv2 back end lowers it: one learn list per call whose fields are
temporaries assigned where the call is (the data's value at the call, since simple_switch
samples the list after ingress), and P4Info digests with p4c's names and type specs."""

from __future__ import annotations

from p4switch.compiler import compile_source

from .helpers import program

DECLS = "struct pair_t { bit<48> mac; bit<9> port; }"
INGRESS = """
    apply {
        meta.p.mac = hdr.eth.src;
        if (hdr.eth.ether_type == 1) { digest<pair_t>(1, meta.p); }
        else { digest<pair_t>(1, {hdr.eth.dst, 3}); }
        digest<tuple<bit<16>, bool>>(1, {hdr.eth.ether_type, hdr.eth.isValid()});
        meta.p.mac = 0;
    }"""


def compiled():
    return compile_source(program(INGRESS, decls=DECLS, meta_fields="pair_t p;"), "d.p4")


def _assignments(bmv2) -> dict[str, list]:
    """scalar name -> the source of each assign to it."""
    out: dict[str, list] = {}
    for action in bmv2["actions"]:
        for prim in action["primitives"]:
            target = prim["parameters"][0] if prim["parameters"] else None
            if prim["op"] == "assign" and target["value"][0] == "scalars":
                out.setdefault(target["value"][1], []).append(prim["parameters"][1])
    return out


def test_each_call_has_its_own_learn_list_of_temporaries():
    bmv2 = compiled().bmv2
    lists = bmv2["learn_lists"]
    assert sorted(ll["name"] for ll in lists) == ["digest_0", "pair_t", "pair_t"]
    assert sorted(ll["id"] for ll in lists) == [1, 2, 3]
    assigned = _assignments(bmv2)
    sources = []
    for ll in lists:
        fields = [e["value"] for e in ll["elements"]]
        assert all(header == "scalars" for header, _ in fields)
        sources.append([assigned[name] for _, name in fields])   # each assigned once
    assert all(len(s) == 1 for srcs in sources for s in srcs)
    digests = {(p["parameters"][1]["value"]) for a in bmv2["actions"] for p in a["primitives"]
               if p["op"] == "generate_digest"}
    assert len(digests) == 3


def test_p4info_digests_carry_p4c_type_specs():
    info = compiled().p4info
    specs = {d.preamble.name: d.type_spec for d in info.digests}
    assert set(specs) == {"pair_t", "digest_0"}
    assert specs["pair_t"].struct.name == "pair_t"
    members = specs["digest_0"].tuple.members
    assert [m.WhichOneof("type_spec") for m in members] == ["bitstring", "bool"]
    assert members[0].bitstring.bit.bitwidth == 16
    assert [m.name for m in info.type_info.structs["pair_t"].members] == ["mac", "port"]
