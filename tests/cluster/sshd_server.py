"""A second "server" for cluster tests: this machine reached over SSH at 127.0.0.2, as Mininet's
cluster sanity check does. Debian's sshd runs with its own host key, config and port, root logs
in with a key made here; `ssh -F config` reaches it. Everything lives in one temp dir."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SERVER = "127.0.0.2"
SSHD = "/usr/sbin/sshd"


@dataclass
class SshServer:
    address: str
    port: int
    ssh_config: Path
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def start_sshd(directory: Path, address: str = SERVER) -> SshServer:
    """sshd on address:<free port>, foreground (-D), so stopping it is killing our child."""
    if not Path(SSHD).exists() or shutil.which("ssh-keygen") is None:
        raise RuntimeError(f"{SSHD} is missing: apt-get install openssh-server (bootstrap.sh "
                           f"installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "id_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(directory / name)], check=True)
    (directory / "authorized_keys").write_text((directory / "id_key.pub").read_text())
    (directory / "authorized_keys").chmod(0o600)
    port = _free_port(address)
    (directory / "sshd_config").write_text(f"""\
ListenAddress {address}:{port}
HostKey {directory / 'host_key'}
PidFile {directory / 'sshd.pid'}
AuthorizedKeysFile {directory / 'authorized_keys'}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitTunnel ethernet
AllowTcpForwarding yes
UseDNS no
StrictModes no
UsePAM no
MaxSessions 200
MaxStartups 200:30:400
""")
    (directory / "ssh_config").write_text(f"""\
Host {address}
  Port {port}
  User root
  IdentityFile {directory / 'id_key'}
  IdentitiesOnly yes
  UserKnownHostsFile {directory / 'known_hosts'}
  StrictHostKeyChecking accept-new
  BatchMode yes
  ConnectTimeout 20
""")
    Path("/run/sshd").mkdir(exist_ok=True)       # sshd's privilege separation directory
    log = directory / "sshd.log"
    process = subprocess.Popen([SSHD, "-D", "-f", str(directory / "sshd_config"), "-E",
                                str(log)], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited ({process.returncode}): {log.read_text()[-500:]}")
        with socket.socket() as probe:
            if probe.connect_ex((address, port)) == 0:
                return SshServer(address, port, directory / "ssh_config", process, log)
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("sshd did not listen within 20 s")
