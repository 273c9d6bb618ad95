"""A real OpenSSH ``sshd`` on a free loopback port, with generated keys and its own config."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


def find_sshd() -> str:
    for p in SSHD_CANDIDATES:
        if os.access(p, os.X_OK):
            return p
    found = shutil.which("sshd")
    if found:
        return found
    raise RuntimeError("OpenSSH sshd is not installed: run `apt-get install -y openssh-server` (.ci/run does).")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, comment: str = "spectui-test") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path


def fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], check=True,
                         capture_output=True, text=True).stdout
    return out.split()[1]


class LoopbackSshd:
    def __init__(self, root: Path, *, home: Path | None = None):
        """``home``: the HOME of sessions on this sshd (through authorized_keys' ``environment=``), so that
        several sshd on this machine are hosts with folders of their own (an agent's default state folder is
        ``~/.cache/spectui``)."""
        self.root = Path(root)
        self.home = home
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.user = getpass.getuser()
        self.host_key = keygen(self.root / "ssh_host_ed25519_key", "host")
        self.client_key = keygen(self.root / "id_client", "client")
        self.other_key = keygen(self.root / "id_other", "not-authorized")
        options = f'environment="HOME={home}" ' if home is not None else ""
        (self.root / "authorized_keys").write_text(options + (self.root / "id_client.pub").read_text())
        os.chmod(self.root / "authorized_keys", 0o600)
        self.config = self.root / "sshd_config"
        self.config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            f"PidFile {self.root / 'sshd.pid'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "AllowTcpForwarding yes",
            "LogLevel ERROR",
            "MaxStartups 50",
            "PermitUserEnvironment yes" if home is not None else "",
            "",
        ]))
        # The client side: an empty SSH config and an empty known_hosts.
        self.ssh_config = self.root / "ssh_config"
        self.ssh_config.write_text("")
        self.known_hosts = self.root / "known_hosts"
        self.proc: subprocess.Popen | None = None

    @property
    def host_fingerprint(self) -> str:
        return fingerprint(Path(str(self.host_key) + ".pub"))

    @property
    def dest(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def trust_host_key(self) -> None:
        key = Path(str(self.host_key) + ".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key[0]} {key[1]}\n")

    def host_target(self, state_dir, *, trust: bool = True, simulated: bool = True, **ssh_opts):
        """A HostTarget reaching this sshd with the client key (the agent on this Python)."""
        import sys

        from spectui.core.session import HostTarget
        from spectui.core.transport.ssh import SshOptions

        if trust:
            self.trust_host_key()
        o = SshOptions(config_file=str(self.ssh_config), identity_files=[str(self.client_key)],
                       known_hosts=str(self.known_hosts), **ssh_opts)
        return HostTarget(kind="ssh", destination=self.dest, ssh=o, python=sys.executable, simulated=simulated,
                          state_dir=str(state_dir))

    def cli_args(self, *, trust: bool = True) -> list[str]:
        if trust:
            self.trust_host_key()
        return ["-F", str(self.ssh_config), "-i", str(self.client_key), "--known-hosts", str(self.known_hosts)]

    def start(self) -> "LoopbackSshd":
        sshd = find_sshd()
        Path("/run/sshd").mkdir(parents=True, exist_ok=True) if os.geteuid() == 0 else None
        with open(self.root / "sshd.log", "ab") as log:  # sshd holds its own copy of the descriptor
            self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                         stderr=log, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sshd exited at start: " + (self.root / "sshd.log").read_text()[-2000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def session_pids(self) -> list[int]:
        """Per-connection sshd processes (children of the listener)."""
        import psutil

        if self.proc is None:
            return []
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=False)]
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> "LoopbackSshd":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
