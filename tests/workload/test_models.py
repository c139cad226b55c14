"""The built-in model workloads (inaemu/workload/models.py, nets.py): the models' parameter
tensors are the reference architectures', DDP's bucketing of them, the measured compute in
model_compute.json and the workload graph built from both. Nothing is measured here; the models
are built on torch's meta device (shapes only)."""

from __future__ import annotations


import pytest

torch = pytest.importorskip("torch")

from inaemu.workload import graph, nets  # noqa: E402
from inaemu.workload.models import (BUCKET_BYTES, FIRST_BUCKET_BYTES, MODELS,  # noqa: E402
                                    WorkloadError, ddp_buckets, load_compute, model_buckets,
                                    model_record, model_workload)

MIB = 1024 * 1024
COUNTS = {"resnet50": (25_557_032, 161), "bert-base": (109_482_240, 199),
          "gpt2": (124_439_808, 148)}


def shapes(name: str) -> list[tuple[str, tuple[int, ...]]]:
    model = nets.build(name, "meta")
    return [(n, tuple(p.shape)) for n, p in model.named_parameters()]


@pytest.mark.parametrize("name", MODELS)
def test_parameter_counts(name):
    model = nets.build(name, "meta")
    assert all(p.is_meta for p in model.parameters())
    count, tensors = COUNTS[name]
    assert nets.count(model) == count
    assert len(list(model.parameters())) == tensors


def resnet50_reference_layout() -> list[tuple[str, tuple[int, ...]]]:
    """torchvision's resnet50() parameters (names, shapes, order), from its layout rule:
    a 7x7 stem, stages of [3, 4, 6, 3] bottlenecks of widths 64..512 (x4 out), the first
    block of each stage with a 1x1 conv + batch norm `downsample`, then fc."""
    out = [("conv1.weight", (64, 3, 7, 7)), ("bn1.weight", (64,)), ("bn1.bias", (64,))]
    inplanes = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3)), 1):
        for block in range(blocks):
            p = f"layer{stage}.{block}."
            convs = [(width, inplanes, 1, 1), (width, width, 3, 3), (4 * width, width, 1, 1)]
            for i, shape in enumerate(convs, 1):
                out += [(f"{p}conv{i}.weight", shape), (f"{p}bn{i}.weight", (shape[0],)),
                        (f"{p}bn{i}.bias", (shape[0],))]
            if block == 0:
                out += [(f"{p}downsample.0.weight", (4 * width, inplanes, 1, 1)),
                        (f"{p}downsample.1.weight", (4 * width,)),
                        (f"{p}downsample.1.bias", (4 * width,))]
            inplanes = 4 * width
    return out + [("fc.weight", (1000, 2048)), ("fc.bias", (1000,))]


def test_resnet50_tensors_are_torchvisions():
    assert shapes("resnet50") == resnet50_reference_layout()
    keys = list(nets.build("resnet50", "meta").state_dict())
    assert len(keys) == 320          # + running_mean, running_var, num_batches_tracked per BN
    assert keys[:6] == ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
                        "bn1.running_var", "bn1.num_batches_tracked"]


def test_bert_base_tensors_are_the_references():
    got = shapes("bert-base")
    assert got[:5] == [("embeddings.word_embeddings.weight", (30522, 768)),
                       ("embeddings.position_embeddings.weight", (512, 768)),
                       ("embeddings.token_type_embeddings.weight", (2, 768)),
                       ("embeddings.LayerNorm.weight", (768,)),
                       ("embeddings.LayerNorm.bias", (768,))]
    layer = []
    for part, shape in (("attention.self.query", (768, 768)), ("attention.self.key", (768, 768)),
                        ("attention.self.value", (768, 768)),
                        ("attention.output.dense", (768, 768)),
                        ("attention.output.LayerNorm", None),
                        ("intermediate.dense", (3072, 768)), ("output.dense", (768, 3072)),
                        ("output.LayerNorm", None)):
        out = shape[0] if shape else 768
        layer += [(f"{part}.weight", shape or (768,)), (f"{part}.bias", (out,))]
    for i in range(12):
        assert got[5 + 16 * i: 5 + 16 * (i + 1)] == [(f"encoder.layer.{i}.{n}", s)
                                                     for n, s in layer]
    assert got[-2:] == [("pooler.dense.weight", (768, 768)), ("pooler.dense.bias", (768,))]


def test_gpt2_small_tensors_are_the_references():
    got = shapes("gpt2")
    assert got[:2] == [("wte.weight", (50257, 768)), ("wpe.weight", (1024, 768))]
    assert got[2:14] == [("h.0.ln_1.weight", (768,)), ("h.0.ln_1.bias", (768,)),
                         ("h.0.attn.c_attn.weight", (768, 2304)), ("h.0.attn.c_attn.bias", (2304,)),
                         ("h.0.attn.c_proj.weight", (768, 768)), ("h.0.attn.c_proj.bias", (768,)),
                         ("h.0.ln_2.weight", (768,)), ("h.0.ln_2.bias", (768,)),
                         ("h.0.mlp.c_fc.weight", (768, 3072)), ("h.0.mlp.c_fc.bias", (3072,)),
                         ("h.0.mlp.c_proj.weight", (3072, 768)), ("h.0.mlp.c_proj.bias", (768,))]
    assert got[-2:] == [("ln_f.weight", (768,)), ("ln_f.bias", (768,))]


def test_ddp_buckets_rule():
    # the first bucket closes at first_cap or more, later ones at cap or more, the rest last
    assert ddp_buckets([1, 1, 1, 5, 2, 2, 1, 1], first_cap=2, cap=4) == \
        [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert ddp_buckets([10, 1], first_cap=2, cap=4) == [[0], [1]]
    assert ddp_buckets([], 2, 4) == []
    with pytest.raises(ValueError):
        ddp_buckets([1], 0, 4)


def test_sim_train_bucket_layout_is_the_same_rule():
    pytest.importorskip("sklearn")
    from inaemu.train.sim_train import bucket_layout
    params = [torch.nn.Parameter(torch.empty(n, device="meta")) for n in (3, 1, 2, 4)]
    # reverse order, bytes 16, 8, 4, 12 with caps 8 then 16
    assert bucket_layout(params, 8, 16) == [[3], [2, 1, 0]]


@pytest.mark.parametrize("name", MODELS)
def test_data_file_matches_the_definition(name):
    record = model_record(name)
    assert [(n, k) for n, k, _ in record["parameters"]] == \
        [(n, p.numel()) for n, p in nets.build(name, "meta").named_parameters()]
    assert all(ready >= 0 for _, _, ready in record["parameters"])
    for key in ("forward_s", "backward_total_s", "optimizer_s"):
        assert record[key] > 0
    measured = record["measured"]
    assert measured["torch"] and measured["cpu"] and measured["cores"] >= 1
    assert record["batch"]["batch"] == 8
    buckets = model_buckets(name)
    assert [b.bytes for b in buckets] == record["buckets_default_cap"]["bytes"]
    assert [round(b.backward_s, 6) for b in buckets] == \
        pytest.approx(record["buckets_default_cap"]["backward_s"], abs=2e-6)
    # the buckets' backward times add up to the last gradient's readiness
    assert sum(b.backward_s for b in buckets) == \
        pytest.approx(max(r for _, _, r in record["parameters"]))


def check_cap_rule(name, buckets, first, cap):
    sizes = {n: k * 4 for n, k, _ in model_record(name)["parameters"]}
    for index, bucket in enumerate(buckets):
        limit = first if index == 0 else cap
        assert bucket.bytes == sum(sizes[p] for p in bucket.parameters)
        if index < len(buckets) - 1:
            # closed by its last tensor: at the limit or over, and under it without that tensor
            assert bucket.bytes >= limit
            assert bucket.bytes - sizes[bucket.parameters[-1]] < limit
        else:
            assert bucket.bytes > 0


@pytest.mark.parametrize("name", MODELS)
def test_default_buckets(name):
    buckets = model_buckets(name)
    params = COUNTS[name][0]
    assert sum(b.bytes for b in buckets) == 4 * params
    names = [p for b in buckets for p in b.parameters]
    assert sorted(names) == sorted(n for n, _ in shapes(name))     # each parameter once
    assert buckets[0].bytes >= FIRST_BUCKET_BYTES
    check_cap_rule(name, buckets, FIRST_BUCKET_BYTES, BUCKET_BYTES)
    assert all(b.backward_s >= 0 for b in buckets)


@pytest.mark.parametrize("name", MODELS)
def test_smaller_cap_gives_more_buckets(name):
    default = model_buckets(name)
    small = model_buckets(name, 5 * MIB)
    assert len(small) > len(default)
    assert sum(b.bytes for b in small) == 4 * COUNTS[name][0]
    check_cap_rule(name, small, 5 * MIB, 5 * MIB)      # DDP: a set cap is the first's too
    assert sum(b.backward_s for b in small) == pytest.approx(sum(b.backward_s for b in default))


def test_bucket_order_is_gradient_ready_order():
    record = model_record("resnet50")
    ready = {n: r for n, _, r in record["parameters"]}
    order = [p for b in model_buckets("resnet50") for p in b.parameters]
    assert [ready[p] for p in order] == sorted(ready[p] for p in order)
    assert set(model_buckets("resnet50")[0].parameters) == {"fc.weight", "fc.bias"}


@pytest.mark.parametrize("iterations", [1, 3])
def test_model_workload_structure(iterations):
    w = model_workload("bert-base", 4, iterations=iterations)
    buckets = model_buckets("bert-base")
    record = model_record("bert-base")
    b = len(buckets)
    assert w.n == 4 and w.name == "bert-base"
    assert w.meta["model"] == "bert-base" and w.meta["parameters"] == COUNTS["bert-base"][0]
    assert w.meta["buckets"] == [x.bytes for x in buckets]
    assert "measured on" in w.source and record["measured"]["cpu"] in w.source
    assert w.allreduce_bytes() == [x.bytes for x in buckets] * iterations
    for rank in w.ranks:
        nodes = rank.nodes
        assert len(nodes) == iterations * (2 + 2 * b)
        assert len({n.id for n in nodes}) == len(nodes)
        per = 2 + 2 * b
        previous_step = None
        for it in range(iterations):
            step = nodes[it * per:(it + 1) * per]
            forward, optimizer = step[0], step[-1]
            assert isinstance(forward, graph.Compute) and forward.name.startswith("forward")
            assert forward.duration_s == record["forward_s"]
            assert forward.deps == (() if previous_step is None else (previous_step.id,))
            backwards = [n for n in step if n.name.startswith("backward")]
            reduces = [n for n in step if isinstance(n, graph.Collective)]
            assert len(backwards) == len(reduces) == b
            for j, (back, red) in enumerate(zip(backwards, reduces)):
                assert back.deps == ((forward if j == 0 else backwards[j - 1]).id,)
                assert back.duration_s == pytest.approx(buckets[j].backward_s)
                assert red.deps == (back.id,) and red.size_bytes == buckets[j].bytes
                assert red.kind == "all_reduce"
            assert optimizer.name.startswith("optimizer step")
            assert set(optimizer.deps) == {backwards[-1].id, *(r.id for r in reduces)}
            assert optimizer.duration_s == record["optimizer_s"]
            previous_step = optimizer


def test_compute_speedup_and_cap_in_workload():
    base = model_workload("resnet50", 2)
    fast = model_workload("resnet50", 2, compute_speedup=10.0)
    assert fast.total_compute_s() == pytest.approx(base.total_compute_s() / 10)
    assert "compute_speedup 10" in fast.source
    small = model_workload("resnet50", 2, bucket_cap_bytes=5 * MIB)
    assert len(small.allreduce_bytes()) > len(base.allreduce_bytes())
    assert small.meta["first_bucket_bytes"] == 5 * MIB
    assert base.meta["first_bucket_bytes"] == FIRST_BUCKET_BYTES
    assert small.total_compute_s() == pytest.approx(base.total_compute_s())


def test_unknown_model_and_bad_arguments_refused():
    with pytest.raises(WorkloadError, match="unknown model 'vgg16'.*resnet50, bert-base, gpt2"):
        model_workload("vgg16", 2)
    with pytest.raises(WorkloadError, match="workers"):
        model_workload("resnet50", 0)
    with pytest.raises(WorkloadError, match="compute_speedup"):
        model_workload("resnet50", 2, compute_speedup=0)
    with pytest.raises(WorkloadError, match="iterations"):
        model_workload("resnet50", 2, iterations=0)


def test_data_file_covers_every_model():
    assert list(load_compute()["models"]) == list(MODELS)


def test_cli_summary(capsys):
    from inaemu.workload.models import main
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "resnet50: 25,557,032 parameters, 5 buckets" in out
    assert "bert-base: 109,482,240 parameters" in out
