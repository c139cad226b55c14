"""P4Runtime over TLS on every Mininet path besides `inaemu run` (tests/controller/
test_tls_switches.py has that one): `inaemu scenario` (CLI and the Python API), `inaemu train`,
`inaemu compare`, scripts/contention.py. The same five options, checked before any network is
built, refused with --net sim, and handed to the switches and the controller. Nothing here
starts Mininet: the network and the controller are replaced by recorders that stop the run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from inaemu.cli import build_parser, main
from inaemu.experiment.config import ConfigError
from inaemu.experiment.tls import RunTLS
from tests.server.tls_certs import make_pki

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "scenarios" / "two-tenants.yaml"


class Stop(Exception):
    """Raised by a recorder: the run got as far as building its network."""


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls_options(pki, mutual: bool = False) -> list[str]:
    options = ["--grpc-cacert", str(pki.ca), "--grpc-server-cert", str(pki.switch.cert),
               "--grpc-server-key", str(pki.switch.key)]
    if mutual:
        options += ["--grpc-cert", str(pki.client.cert), "--grpc-key", str(pki.client.key)]
    return options


# -- inaemu scenario ------------------------------------------------------------------------------

@pytest.fixture
def no_scenario_run(monkeypatch):
    """Any scenario that would start fails the test: errors must come first."""
    import inaemu.scenario as package

    def refuse(*_args, **_kwargs):
        raise AssertionError("the scenario was started")
    monkeypatch.setattr(package, "run_scenario", refuse)


@pytest.mark.parametrize("extra, message", [
    (["--net", "sim"], "need --net mininet"),
    (["--net", "mininet", "--grpc-cacert", "/nonexistent/ca.crt"],
     "--grpc-cacert /nonexistent/ca.crt: cannot read it"),
])
def test_scenario_cli_refuses_tls_with_sim_and_unusable_files_before_running(
        pki, no_scenario_run, capsys, extra, message):
    options = tls_options(pki)
    if "--grpc-cacert" in extra:
        options = options[2:]
    assert main(["scenario", str(SCENARIO), *options, *extra]) == 2
    assert message in capsys.readouterr().err


def test_scenario_cli_partial_options_name_the_missing_one(pki, no_scenario_run, capsys):
    assert main(["scenario", str(SCENARIO), "--net", "mininet",
                 *tls_options(pki)[:4]]) == 2
    assert "--grpc-server-key is needed too" in capsys.readouterr().err


def test_scenario_api_checks_tls_before_anything_runs(pki, tmp_path, monkeypatch):
    import inaemu.scenario.mininet_engine as engine
    from inaemu.scenario import Experiment, ScenarioError
    monkeypatch.setattr(engine, "run_mininet",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("started")))
    exp = Experiment.from_file(SCENARIO)
    tls = RunTLS.from_options(str(pki.ca), str(pki.switch.cert), str(pki.switch.key))
    with pytest.raises(ScenarioError, match="tls: P4Runtime over TLS needs net='mininet'"):
        exp.run(net="sim", tls=tls)
    with pytest.raises(ScenarioError, match="tls: expected a RunTLS"):
        exp.run(net="mininet", tls=str(pki.ca))
    key = tmp_path / "switch.key"                      # a file that changes after the check
    key.write_bytes(pki.switch.key.read_bytes())
    gone = RunTLS.from_options(str(pki.ca), str(pki.switch.cert), str(key))
    key.unlink()
    with pytest.raises(ScenarioError, match=r"--grpc-server-key .*switch.key: cannot read it"):
        exp.run(net="mininet", tls=gone)


def test_scenario_on_mininet_gives_the_switches_and_the_controller_their_files(
        pki, monkeypatch):
    import topologies.networks as networks
    from inaemu.scenario import load_scenario
    from inaemu.scenario.fabric_control import FabricControl
    from inaemu.scenario.mininet_engine import MininetScenario
    seen = {}

    class FakeNetwork:
        def __init__(self, topology, **options):
            seen["network"] = options

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

    def over_grpc(topology, **options):
        seen["control"] = options
        raise Stop
    monkeypatch.setattr(networks, "mininet_network", FakeNetwork)
    monkeypatch.setattr(FabricControl, "over_grpc", staticmethod(over_grpc))
    tls = RunTLS.from_options(*(str(p) for p in (pki.ca, pki.switch.cert, pki.switch.key,
                                                 pki.client.cert, pki.client.key)))
    lines = []
    with pytest.raises(Stop):
        MininetScenario(load_scenario(SCENARIO), say=lines.append, bar=False, tls=tls).run()
    switch = seen["network"]["tls"]
    assert (switch.cert, switch.key, switch.cacert) == (pki.switch.cert, pki.switch.key, pki.ca)
    client = seen["control"]["tls"]
    assert (client.cacert, client.cert, client.key) == (pki.ca, pki.client.cert,
                                                        pki.client.key)
    assert "P4Runtime over mutual TLS" in lines[0]


# -- inaemu train ---------------------------------------------------------------------------------

def train_config(*extra: str):
    from inaemu.train.cli import config_from
    return config_from(build_parser(only="train").parse_args(["train", *extra]))


def test_train_takes_runs_tls_options_and_refuses_them_with_sim(pki):
    cfg = train_config("--net", "mininet", *tls_options(pki, mutual=True))
    assert cfg.tls.mutual and cfg.run_config().tls == cfg.tls
    assert train_config("--net", "mininet").tls is None
    with pytest.raises(ConfigError, match="need --net mininet"):
        train_config("--net", "sim", *tls_options(pki))
    with pytest.raises(ConfigError, match="--grpc-cert and --grpc-key go together"):
        train_config(*tls_options(pki), "--grpc-cert", str(pki.client.cert))


def test_train_on_mininet_starts_its_switches_with_tls(pki, tmp_path, monkeypatch):
    import topologies.mininet_net as mininet_net
    from inaemu.train.mininet_train import train_mininet
    seen = {}

    def network(topology, **options):
        seen.update(options)
        raise Stop
    monkeypatch.setattr(mininet_net, "MininetNetwork", network)
    monkeypatch.setattr("inaemu.experiment.mininet_run.compile_ina",
                        lambda k, out, compiler="inaemu": (out / "p4info", out / "json"))
    cfg = train_config("--net", "mininet", "--algo", "ring", *tls_options(pki))
    with pytest.raises(Stop):
        train_mininet(cfg, tmp_path, lambda line: None)
    assert seen["tls"].target_options()[:5] == [
        "--grpc-server-ssl", "--grpc-server-cert", str(pki.switch.cert), "--grpc-server-key",
        str(pki.switch.key)]
    assert seen["tls"].cacert is None                 # not mutual: no client certificate


# -- inaemu compare -------------------------------------------------------------------------------

def test_compare_keeps_tls_on_every_point_and_refuses_it_with_sim(pki, capsys):
    from inaemu.run import config_from
    args = build_parser(only="compare").parse_args(
        ["compare", "--net", "mininet", "--sizes-kib", "4,8", *tls_options(pki)])
    base = config_from(args)
    assert base.with_(workers=3, size_bytes=8192).tls == base.tls is not None
    assert main(["compare", "--net", "sim", "--sizes-kib", "4", *tls_options(pki)]) == 2
    assert "TLS is for Mininet" in capsys.readouterr().err


# -- scripts/contention.py ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def contention():
    spec = importlib.util.spec_from_file_location("contention_script",
                                                  ROOT / "scripts" / "contention.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_contention_refuses_tls_with_sim_and_bad_files_before_any_network(
        pki, contention, capsys, monkeypatch):
    monkeypatch.setattr(contention, "run_sim",
                        lambda *a: (_ for _ in ()).throw(AssertionError("started")))
    monkeypatch.setattr(contention, "run_mininet",
                        lambda *a: (_ for _ in ()).throw(AssertionError("started")))
    with pytest.raises(SystemExit) as exit_:
        contention.main(["--net", "sim", *tls_options(pki)])
    assert exit_.value.code == 2
    assert "need --net mininet" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        contention.main(["--net", "mininet", *tls_options(pki)[:4],
                         "--grpc-server-key", str(pki.client.key)])
    assert "does not match --grpc-server-cert" in capsys.readouterr().err


def test_contention_on_mininet_hands_tls_to_network_and_controller(
        pki, contention, tmp_path, monkeypatch):
    import topologies.mininet_net as mininet_net
    seen = {}

    def network(topology, **options):
        seen.update(options)
        raise Stop
    monkeypatch.setattr(mininet_net, "MininetNetwork", network)
    monkeypatch.setattr(contention, "_compile_mininet", lambda args, run_dir: (None, None))
    monkeypatch.setattr(sys, "argv", ["contention.py"])
    args = type("Args", (), dict(jobs=1, workers=2, delay_ms=1.0, size_kib=1, seed=1,
                                 tls=RunTLS.from_options(*tls_options(pki, True)[1::2])))()
    with pytest.raises(Stop):
        contention.run_mininet(args, "refuse", {}, tmp_path)
    assert seen["tls"].cacert == pki.ca               # mutual: the CA checks the controller
