"""`inaemu run --format int32|int16|int8 --scaling job|block` (docs/formats.md) on the simulator:
every combination correct within its own bound, packed lanes putting fewer bytes on the wire,
and refused values named. In-process through the CLI entry point, as tests/run/test_sim_runs."""

from __future__ import annotations

import json

import pytest

from inaemu.cli import main
from inaemu.experiment.config import ConfigError, RunConfig

SMALL = ["--net", "sim", "--algo", "ina", "--size-mib", "0.03", "--elems", "8", "--pool", "16",
         "--loss", "2", "--timeout", "120"]


def test_every_format_and_scaling_is_correct(tmp_path, capsys) -> None:
    sent = {}
    for fmt in ("int32", "int16", "int8"):
        for scaling in ("job", "block"):
            out = tmp_path / f"{fmt}-{scaling}"
            status = main(["run", *SMALL, "--format", fmt, "--scaling", scaling,
                           "--out", str(out)])
            printed = capsys.readouterr().out
            assert status == 0, printed
            (summary,) = json.loads((out / "summary.json").read_text())
            assert summary["correct"] and summary["finished"] == 4
            assert 0 <= summary["max_abs_err"] <= summary["err_bound"]
            assert (summary["format"], summary["scaling"]) == (fmt, scaling)
            workers = json.loads((out / "workers.json").read_text())
            sent[fmt, scaling] = sum(w["bytes_sent"] for w in workers)
    for scaling in ("job", "block"):
        assert sent["int16", scaling] < 0.7 * sent["int32", scaling]
        assert sent["int8", scaling] < 0.7 * sent["int16", scaling]


def test_divisor_overflows_are_redone(tmp_path, capsys) -> None:
    """--divisor 1: int8 sums of 4 workers overflow; the switch flags those chunks and the
    workers redo them at the safe scale: the result is within the bound, at some extra bytes."""
    sent = {}
    for divisor in (None, 1):
        out = tmp_path / f"d{divisor}"
        extra = [] if divisor is None else ["--divisor", str(divisor)]
        lossless = [a if a != "2" else "0" for a in SMALL]      # bytes differ by redos only
        status = main(["run", *lossless, "--format", "int8", "--scaling", "block", *extra,
                       "--out", str(out)])
        printed = capsys.readouterr().out
        assert status == 0, printed
        (summary,) = json.loads((out / "summary.json").read_text())
        assert summary["correct"] and summary["finished"] == 4
        sent[divisor] = sum(w["bytes_sent"] for w in
                            json.loads((out / "workers.json").read_text()))
    assert sent[1] > sent[None]            # the redone chunks


def test_bad_format_is_refused() -> None:
    with pytest.raises(ConfigError, match="format"):
        RunConfig(lane_format="int4", net="sim")
    with pytest.raises(ConfigError, match="scaling"):
        RunConfig(scaling="lane", net="sim")
    with pytest.raises(ConfigError, match="divisor"):
        RunConfig(divisor=2, net="sim")                       # int32 sums are not checked
    with pytest.raises(ConfigError, match="divisor"):
        RunConfig(divisor=5, workers=4, lane_format="int8", net="sim")
    with pytest.raises(SystemExit):
        main(["run", "--net", "sim", "--format", "fp8"])


def test_the_model_counts_packed_lanes(tmp_path, capsys) -> None:
    """The α-β model's INA time follows the bytes on the wire: int8 is a quarter of int32's
    (it counted 4 bytes per value whatever the format)."""
    model = {}
    for fmt in ("int32", "int8"):
        out = tmp_path / fmt
        assert main(["run", "--net", "sim", "--algo", "ina", "--size-mib", "0.25",
                     "--format", fmt, "--out", str(out)]) == 0
        capsys.readouterr()
        (summary,) = json.loads((out / "summary.json").read_text())
        model[fmt] = summary["model_time_s"]
        assert 0.8 < summary["measured_over_model"] < 1.25
    assert model["int8"] < 0.3 * model["int32"]
