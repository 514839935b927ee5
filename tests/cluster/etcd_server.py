"""A throwaway etcd server for tests: free ports, a temporary data dir, fast elections.

    with EtcdServer(tmp_path) as etcd:
        etcd.url          # "etcd://127.0.0.1:PORT"
        etcd.stop(); etcd.start()   # restart with the same data
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def etcd_binary() -> str | None:
    return shutil.which("etcd")


class EtcdServer:
    def __init__(self, directory: Path, *, fast: bool = True) -> None:
        self.directory = Path(directory)
        self.client_port = free_port()
        self.peer_port = free_port()
        self.fast = fast
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"etcd://127.0.0.1:{self.client_port}"

    @property
    def endpoint(self) -> tuple[str, int]:
        return "127.0.0.1", self.client_port

    def start(self, timeout: float = 30.0) -> EtcdServer:
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError("etcd is not installed (Debian package etcd-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [binary, "--name", "test", "--data-dir", str(self.directory / "etcd-data"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"test={peer}", "--log-level", "warn"]
        if self.fast:
            args += ["--heartbeat-interval", "20", "--election-timeout", "200"]
        log = open(self.directory / "etcd.log", "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.proc.returncode}: "
                                   f"{(self.directory / 'etcd.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=1) as resp:
                    if b'"true"' in resp.read():
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("etcd did not become healthy in time")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
