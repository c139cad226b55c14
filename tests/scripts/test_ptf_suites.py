"""scripts/ptf_suites.py without PTF: how it reads a p4-guide runptf.sh (the commands it runs
instead of the script's) and how it reads PTF's verdicts."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import PROJECT_ROOT

SPEC = importlib.util.spec_from_file_location("ptf_suites",
                                              PROJECT_ROOT / "scripts" / "ptf_suites.py")
ptf_suites = importlib.util.module_from_spec(SPEC)
sys.modules["ptf_suites"] = ptf_suites       # its dataclasses look their module up there
SPEC.loader.exec_module(ptf_suites)

RUNPTF = r"""#! /bin/bash
T="`realpath ../../testlib`"
BASE_TEST_DIR=$P4C_CLONE_DIR/tools/ptf
set -x
p4c --target bmv2 \
    --arch v1model \
    --p4runtime-files prog.p4info.txtpb \
    prog.p4
/bin/rm -f ss-log.txt
sudo simple_switch_grpc \
     --log-file ss-log \
     --log-flush \
     -i 0@veth0 \
     -i 3@veth6 \
     --no-p4 \
     -- --cpu-port 510 &
sleep 2
ptf --pypath "$P" --test-dir ptf --list
sudo ${P4_EXTRA_SUDO_OPTS} `which ptf` \
    --pypath "$P" \
    -i 0@veth1 \
    -i 3@veth7 \
    --test-params="grpcaddr='localhost:9559';p4info='prog.p4info.txtpb';config='prog.json'" \
    --test-dir ptf OneTest
sudo pkill --signal 9 --list-name simple_switch
"""


def test_a_runptf_script_is_read_for_its_three_commands(tmp_path):
    suite_dir = tmp_path / "ptf-tests" / "prog"
    (suite_dir / "ptf").mkdir(parents=True)
    (suite_dir / "runptf.sh").write_text(RUNPTF)
    suite = ptf_suites.read_runptf(suite_dir / "runptf.sh", tmp_path)
    assert suite.name == "ptf-tests/prog"
    assert (suite.program, suite.p4info) == ("prog.p4", "prog.p4info.txtpb")
    assert suite.ports == [0, 3]
    assert suite.switch_options == ["--log-file", "ss-log", "--log-flush", "--no-p4", "--",
                                    "--cpu-port", "510"]
    assert suite.test_params.startswith("grpcaddr='localhost:9559';")
    assert (suite.test_dir, suite.tests) == ("ptf", ["OneTest"])


def test_scripts_it_cannot_run_are_skipped_with_a_reason(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "runptf.sh").write_text(RUNPTF)              # no ptf/ folder
    assert "not in the repository" in ptf_suites.read_runptf(tmp_path / "a" / "runptf.sh",
                                                              tmp_path)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "runptf.sh").write_text("p4testgen --target bmv2 x.p4\n" + RUNPTF)
    assert ptf_suites.read_runptf(tmp_path / "b" / "runptf.sh", tmp_path) == "needs p4testgen"
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "runptf.sh").write_text("echo hello\n")
    assert "not the usual" in ptf_suites.read_runptf(tmp_path / "c" / "runptf.sh", tmp_path)


def test_verdicts_are_read_from_unittest_lines_with_output_between():
    output = "\n".join([
        "demo.FwdTest ... ok",
        "WARNING: demo.Other ... Sending Packet ...",
        "WARNING: Verifying Packet ...",
        "WARNING: FAIL",
        "demo.Err ... some log line",
        "ERROR",
        "demo.Skip ... skipped 'needs a thing'",
    ])
    assert ptf_suites.verdicts(output) == {"demo.FwdTest": "ok", "demo.Other": "FAIL",
                                           "demo.Err": "ERROR", "demo.Skip": "skipped"}
