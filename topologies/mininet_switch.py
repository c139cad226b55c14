"""A Mininet switch that is one P4 switch process: `inaemu switch`, or BMv2's `simple_switch_grpc`.

Like BMv2 under Mininet, the process runs in the root namespace and attaches to the switch's veth
ends (`s1-eth1`, ...) as ports numbered as in the topology. It starts with no program (`--no-p4`)
and a P4Runtime server on 127.0.0.1:`grpc_port`, so the controller configures it entirely over
P4Runtime. Its output goes to `<run_dir>/<name>.out` (plus `--log-file <name>.log` with `trace=True`, and
`<name>-pcap/` with `pcap=True`). `start()` returns once the switch is ready (its "ready" line for inaemu, an accepting
gRPC port for BMv2) and raises `SwitchStartFailed` with the tail of its output otherwise; `stop()`
sends SIGTERM, waits, and kills as a last resort. Everything else is Mininet's `Switch`.

`target="bmv2"` runs the real `simple_switch_grpc`, found on PATH or in the reference toolchain
(`$INAEMU_P4REF/bin`, else /opt/p4ref/bin; `reference_tool`); it has no loss/delay model.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mininet.node import Switch

TARGETS = ("inaemu", "bmv2")
READY_MARK = "inaemu switch ready"
REFERENCE_ROOT = "/opt/p4ref"
THRIFT_OFFSET = 10000     # BMv2 always serves Thrift: grpc_port ± this, away from gRPC ports


def reference_tool(name: str) -> Path | None:
    """`simple_switch_grpc`, `p4c-bm2-ss`...: on PATH, else in $INAEMU_P4REF/bin or
    /opt/p4ref/bin; None when it is nowhere (inaemu never needs it)."""
    found = shutil.which(name)
    if found and not _is_inaemu_shim(Path(found)):
        return Path(found)
    for root in (os.environ.get("INAEMU_P4REF"), REFERENCE_ROOT):
        if root:
            path = Path(root) / "bin" / name
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def _is_inaemu_shim(path: Path) -> bool:
    """`inaemu shims` wrappers on PATH are inaemu itself, not the reference tool (they carry
    inaemu.shims.SHIM_MARK near their start)."""
    try:
        with open(path, "rb") as f:
            return b"# inaemu shim" in f.read(200)
    except OSError:
        return False


def missing_tool_message(name: str) -> str:
    return (f"{name} is not on PATH nor in {REFERENCE_ROOT}/bin "
            "(install BMv2/p4c or set INAEMU_P4REF)")


@dataclass(frozen=True)
class SwitchTLS:
    """P4Runtime over TLS for the switch process: simple_switch_grpc's `--grpc-server-*` target
    options, which `inaemu switch` takes too. `cacert` set: mutual TLS (clients need a
    certificate of that CA)."""

    cert: Path
    key: Path
    cacert: Path | None = None

    def target_options(self) -> list[str]:
        options = ["--grpc-server-ssl", "--grpc-server-cert", str(self.cert),
                   "--grpc-server-key", str(self.key)]
        if self.cacert is not None:
            options += ["--grpc-server-cacert", str(self.cacert), "--grpc-server-with-client-auth"]
        return options

    def files(self) -> list[Path]:
        return [self.cert, self.key] + ([self.cacert] if self.cacert else [])


class SwitchStartFailed(RuntimeError):
    """A switch process exited or did not become ready; the message carries its last output."""


@dataclass(frozen=True)
class PortImpairment:
    """Loss probability (each direction, 0..1) and egress delay for one switch port."""

    loss: float = 0.0
    delay_ms: float = 0.0


def inaemu_executable() -> list[str]:
    """The `inaemu` console script of the running interpreter's environment, else from PATH."""
    beside = Path(sys.executable).with_name("inaemu")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("inaemu")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from inaemu.cli import main; sys.exit(main())"]


class P4Switch(Switch):
    """One P4 switch process per Mininet switch; see the module docstring."""

    tls: SwitchTLS | None = None      # P4Runtime over TLS (set per switch by __init__)

    def __init__(self, name: str, *, device_id: int, grpc_port: int, target: str = "inaemu",
                 json_path: str | None = None, run_dir: str | None = None, trace: bool = False,
                 pcap: bool = False,
                 seed: int = 0, impairments: dict[int, PortImpairment] | None = None,
                 ready_timeout: float = 30.0, tls: SwitchTLS | None = None, **params):
        if target not in TARGETS:
            raise ValueError(f"{name}: target must be one of {', '.join(TARGETS)}, not {target!r}")
        self.executable = reference_tool("simple_switch_grpc") if target == "bmv2" else None
        if target == "bmv2":
            if self.executable is None:
                raise ValueError(f"{name}: target 'bmv2': "
                                 f"{missing_tool_message('simple_switch_grpc')}")
            if any(i.loss or i.delay_ms for i in (impairments or {}).values()):
                raise ValueError(f"{name}: simple_switch_grpc has no per-port loss/delay")
        params["inNamespace"] = False
        super().__init__(name, dpid=f"{device_id:x}" if device_id else None, **params)
        self.device_id = device_id
        self.grpc_port = grpc_port
        self.target = target
        self.json_path = json_path
        self.run_dir = Path(run_dir) if run_dir else None
        self.trace = trace
        self.pcap = pcap
        self.seed = seed
        self.impairments = dict(impairments or {})
        self.ready_timeout = ready_timeout
        self.tls = tls
        self.process: subprocess.Popen | None = None
        self.output_path: Path | None = None

    # -- what to run ------------------------------------------------------------------------------

    def switch_ports(self) -> dict[int, str]:
        """Port number -> interface name, for the data-plane interfaces (not `lo`)."""
        return {self.ports[intf]: intf.name for intf in self.intfList() if intf.name != "lo"}

    def command(self) -> list[str]:
        ports = sorted(self.switch_ports().items())
        interfaces = [arg for port, name in ports for arg in ("-i", f"{port}@{name}")]
        program = [self.json_path] if self.json_path else ["--no-p4"]
        address = f"127.0.0.1:{self.grpc_port}"
        tls = self.tls.target_options() if self.tls else []
        logs: list[str] = []
        if self.trace:
            logs += ["--log-file", str(self._run_dir() / f"{self.name}.log")]
        if self.pcap:
            logs += ["--pcap", str(self._run_dir() / f"{self.name}-pcap")]
        if self.target == "bmv2":
            thrift = self.grpc_port + THRIFT_OFFSET
            if thrift > 65535:
                thrift = self.grpc_port - THRIFT_OFFSET
            # the default notifications socket is per device id, machine-wide: another
            # simple_switch of the same id (another run) would make this one exit
            notify = f"ipc:///tmp/inaemu-bmv2-{self.grpc_port}-notifications.ipc"
            return [str(self.executable), *program, "--device-id", str(self.device_id),
                    *interfaces, *logs, "--thrift-port", str(thrift),
                    "--notifications-addr", notify,
                    "--", "--grpc-server-addr", address, *tls]
        impair: list[str] = []
        for port, spec in sorted(self.impairments.items()):
            if spec.loss:
                impair += ["--loss", f"{port}:{spec.loss:g}"]
            if spec.delay_ms:
                impair += ["--delay-ms", f"{port}:{spec.delay_ms:g}"]
        return [*inaemu_executable(), "switch", *program, "--device-id", str(self.device_id),
                "--grpc-server-addr", address, *interfaces, *logs, *impair,
                "--seed", str(self.seed), *(["--", *tls] if tls else [])]

    def _run_dir(self) -> Path:
        """Where the process's output (`<name>.out`), trace (`<name>.log`) and pcaps go."""
        if self.run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix=f"inaemu-{self.name}-"))
        return self.run_dir

    # -- Mininet's hooks --------------------------------------------------------------------------

    def start(self, controllers) -> None:
        """Launch the process and wait until it is ready; raise SwitchStartFailed otherwise."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process without waiting (to start many switches in parallel)."""
        if self.process is not None:
            return
        run_dir = self._run_dir()
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.pcap:
            (run_dir / f"{self.name}-pcap").mkdir(exist_ok=True)
        self.output_path = run_dir / f"{self.name}.out"
        for name in self.switch_ports().values():  # the process binds to these; they must be up
            subprocess.run(["ip", "link", "set", "dev", name, "up"], check=False)
        with open(self.output_path, "wb") as output:
            self.process = subprocess.Popen(self.command(), stdout=output, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def stop(self, deleteIntfs: bool = True) -> None:
        """SIGTERM, wait a little, SIGKILL as a last resort; then let Mininet delete the veths."""
        self.terminate_process()
        super().stop(deleteIntfs)

    def terminate_process(self, grace: float = 5.0) -> None:
        """SIGTERM, wait up to `grace` seconds, then SIGKILL its whole session."""
        self.request_stop()
        self.wait_stopped(grace)

    def request_stop(self) -> None:
        """Send SIGTERM without waiting (to stop many switches in parallel)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, grace: float = 5.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its own session: children die with it
            except ProcessLookupError:
                pass
            process.wait(timeout=grace)

    # -- readiness --------------------------------------------------------------------------------

    def wait_ready(self) -> None:
        """Block until the launched process is ready; raise SwitchStartFailed if it is not."""
        if self.process is None:
            raise SwitchStartFailed(f"{self.name}: not launched")
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                status = self.process.returncode
                self.process = None
                raise SwitchStartFailed(f"{self.name}: switch exited with status {status}:\n"
                                        f"{self.output_tail()}")
            if self._is_ready():
                return
            time.sleep(0.05)
        self.terminate_process()
        raise SwitchStartFailed(f"{self.name}: not ready after {self.ready_timeout:g} s:\n"
                                f"{self.output_tail()}")

    def _is_ready(self) -> bool:
        if self.target == "inaemu":
            return READY_MARK in self.output()
        with socket.socket() as probe:
            probe.settimeout(0.2)
            return probe.connect_ex(("127.0.0.1", self.grpc_port)) == 0

    def output(self) -> str:
        """Everything the switch process printed so far."""
        try:
            return self.output_path.read_text(errors="replace") if self.output_path else ""
        except OSError:
            return ""

    def output_tail(self, lines: int = 15) -> str:
        return "\n".join(self.output().splitlines()[-lines:]) or "(no output)"
