"""Real broker processes for tests — yours and ours: one broker, or a cluster of brokers on etcd.

    from broker.testing.harness import KBrokerCluster

    with KBrokerCluster(3, tmp_path) as cluster:        # etcd + 3 brokers, each `python -m broker`
        produce_to(cluster.bootstrap_servers)
        cluster.kill(2)                                   # SIGKILL, like a crash
        cluster.restart(2)                                # same node id and data directory

:class:`EtcdServer` runs Debian's ``etcd`` binary on free ports with a
temporary data directory (:class:`EtcdCluster`: several members, each of which can be
paused, killed and restarted — ``KBrokerCluster(3, dir, etcd_members=3)``); :class:`BrokerProcess` runs the pinned command line
(``python -m broker --host --port --data-dir --metrics-port ...``) and waits
until the broker answers ApiVersions.  The pytest plugin wraps these as the
``kbroker_cluster`` fixture.

``listeners=["SASL_SSL", "PLAINTEXT"]`` gives a broker (or every broker of a
cluster) those listeners, each on a free port of 127.0.0.1
(``--set listeners=...``); ``address(name)`` / ``bootstrap(name)`` say where.
Security settings (certificates, users file, authorizer) go in ``extra_args``
or the cluster's ``settings``.  Readiness is checked on a listener without TLS
when there is one (ApiVersions needs no authentication, even on SASL listeners).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from protocol.compiled import PURE_PYTHON_ENV

__all__ = ["BrokerProcess", "EtcdCluster", "EtcdServer", "KBrokerCluster", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api_versions_ok(host: str, port: int, timeout: float = 2.0, *, tls: bool = False) -> bool:
    """True when the broker at host:port answers an ApiVersions v0 request without error
    (over TLS, not verifying the broker, when ``tls``)."""
    from protocol.api import ApiKey, decode_response, encode_request

    sock = socket.create_connection((host, port), timeout=timeout)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        try:
            sock = ctx.wrap_socket(sock, server_hostname=host)
        except BaseException:
            sock.close()
            raise
    with sock:
        sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, 1, "harness", {}))
        header = b""
        while len(header) < 4:
            chunk = sock.recv(4 - len(header))
            if not chunk:
                return False
            header += chunk
        (size,) = struct.unpack(">i", header)
        body = b""
        while len(body) < size:
            chunk = sock.recv(size - len(body))
            if not chunk:
                return False
            body += chunk
        _, resp = decode_response(ApiKey.API_VERSIONS, 0, body)
        return bool(resp.error_code == 0)


def _wait_stopped(pid: int, timeout_s: float = 10.0) -> None:
    """Until every thread of ``pid`` is stopped: a signal is delivered asynchronously, and a member still
    running for a moment after ``kill`` may yet answer (or forward) a request sent to it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            states = [Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                      for tid in os.listdir(f"/proc/{pid}/task")]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return  # gone, or not Linux: nothing to wait for
        if all(state in ("T", "t") for state in states):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} not stopped after SIGSTOP: thread states {states}")
        time.sleep(0.005)


class EtcdServer:
    """One etcd member on 127.0.0.1 with its data under ``directory``: alone (fast elections for tests),
    or one member of an :class:`EtcdCluster`, which sets ``initial_cluster`` and ``timing``."""

    def __init__(self, directory: str | os.PathLike[str], *, fast: bool = True, name: str = "kbroker-test") -> None:
        self.directory = Path(directory)
        self.name = name
        self.client_port = free_port()
        self.peer_port = free_port()
        self.fast = fast
        #: (heartbeat interval, election timeout) in ms; None: etcd's defaults (100, 1000)
        self.timing: tuple[int, int] | None = (20, 200) if fast else None
        #: ``name=peer-url,...`` of every member (None: this member alone)
        self.initial_cluster: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def binary() -> str | None:
        return shutil.which("etcd")

    @property
    def url(self) -> str:
        return f"etcd://127.0.0.1:{self.client_port}"

    @property
    def endpoint(self) -> tuple[str, int]:
        return "127.0.0.1", self.client_port

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0, *, wait: bool = True) -> EtcdServer:
        binary = self.binary()
        if binary is None:
            raise RuntimeError("etcd is not installed (Debian package etcd-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        client, peer = self.client_url, self.peer_url
        args = [binary, "--name", self.name, "--data-dir", str(self.directory / "etcd-data"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", self.initial_cluster or f"{self.name}={peer}", "--log-level", "warn"]
        if self.timing is not None:
            args += ["--heartbeat-interval", str(self.timing[0]), "--election-timeout", str(self.timing[1])]
        with open(self.directory / "etcd.log", "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            self.wait_healthy(timeout)
        return self

    def healthy(self) -> bool:
        """The member answers and has a leader."""
        try:
            with urllib.request.urlopen(f"{self.client_url}/health", timeout=1) as resp:
                return b'"true"' in resp.read()
        except OSError:
            return False

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(f"etcd exited with {code}: {self.log_tail()}")
            if self.healthy():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("etcd did not become healthy in time")

    def status(self) -> dict[str, Any]:
        """etcd's Maintenance.Status of this member (``header.member_id``, ``leader``), through its JSON gateway."""
        return self._post("/v3/maintenance/status", {})

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.client_url}{path}", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=2) as resp:
            result: dict[str, Any] = json.loads(resp.read())
            return result

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.directory / "etcd.log").read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def pause(self) -> None:
        """SIGSTOP: the member keeps its connections but answers nothing (a stalled VM, a long GC pause)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        _wait_stopped(self.proc.pid)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill9(self) -> None:
        """SIGKILL, like a crash; ``start()`` brings the member back with its data."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            os.killpg(proc.pid, signal.SIGCONT)  # a paused member gets the SIGTERM only once continued
            proc.wait(10)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class EtcdCluster:
    """``size`` etcd members on 127.0.0.1 forming one cluster, with etcd's default timing unless
    ``timing`` (heartbeat interval, election timeout in ms) says otherwise.  ``url`` names every
    member, in order; ``members[i]`` can be paused, killed and started again."""

    def __init__(self, directory: str | os.PathLike[str], size: int = 3, *,
                 timing: tuple[int, int] | None = None) -> None:
        self.directory = Path(directory)
        self.members = [EtcdServer(self.directory / f"member-{i}", name=f"member-{i}") for i in range(size)]
        spec = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.timing = timing
            m.initial_cluster = spec

    @property
    def url(self) -> str:
        return "etcd://" + ",".join(f"{h}:{p}" for h, p in self.endpoints)

    @property
    def endpoints(self) -> list[tuple[str, int]]:
        return [m.endpoint for m in self.members]

    @property
    def running(self) -> bool:
        return any(m.running for m in self.members)

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        for m in self.members:
            if not m.running:
                m.start(wait=False)
        for m in self.members:
            m.wait_healthy(timeout)
        return self

    def leader(self) -> int | None:
        """The index of the running member that leads the cluster, as the running members see it
        (None: no leader among them, or none answered)."""
        ids: dict[int, int] = {}
        leader = 0
        for i, m in enumerate(self.members):
            if not m.running:
                continue
            try:
                status = m.status()
            except OSError:
                continue
            ids[int(status["header"]["member_id"])] = i
            leader = leader or int(status.get("leader", 0))
        return ids.get(leader)

    def move_leader(self, index: int, timeout: float = 30.0) -> None:
        """Make member ``index`` the leader (etcd's MoveLeader, sent to the current leader)."""
        target = int(self.members[index].status()["header"]["member_id"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self.leader()
            if current == index:
                return
            if current is not None:
                try:
                    self.members[current]._post("/v3/maintenance/transfer-leadership", {"targetID": str(target)})
                except OSError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"etcd member {index} did not become the leader in time")

    def stop(self) -> None:
        for m in self.members:
            m.stop()

    def __enter__(self) -> EtcdCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerProcess:
    """``python -m broker`` in a subprocess: start, wait until serving, SIGTERM, SIGKILL, restart."""

    def __init__(self, data_dir: str | os.PathLike[str], port: int | None = None,
                 extra_args: list[str] | None = None, *, cwd: str | os.PathLike[str] | None = None,
                 listeners: Sequence[str] | None = None, console: bool = False) -> None:
        self.data_dir = Path(data_dir)
        #: the web console's port (``console=True``: a free one); None: the console is off
        self.console_port: int | None = free_port() if console else None
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.extra_args = list(extra_args or [])
        #: listener name -> port (names of the four protocols, or custom ones mapped in extra_args)
        self.listeners: dict[str, int] = {name.upper(): free_port() for name in listeners or ()}
        if self.listeners:
            self.port = next(iter(self.listeners.values()))
        self.cwd = cwd
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-broker.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_fh: Any = None

    @property
    def bootstrap_servers(self) -> str:
        """The first listener's address."""
        return f"{self.host}:{self.port}"

    def address(self, listener: str) -> tuple[str, int]:
        return self.host, self.listeners[listener.upper()]

    @property
    def console_url(self) -> str:
        """The web console's address (``console=True``)."""
        assert self.console_port is not None, "started without console=True"
        return f"http://{self.host}:{self.console_port}"

    def bootstrap(self, listener: str) -> str:
        return f"{self.host}:{self.listeners[listener.upper()]}"

    def command(self) -> list[str]:
        listeners = []
        if self.listeners:
            spec = ",".join(f"{name}://{self.host}:{port}" for name, port in self.listeners.items())
            listeners = ["--set", f"listeners={spec}"]
        return [sys.executable, "-m", "broker", "--host", self.host, "--port", str(self.port),
                "--data-dir", str(self.data_dir), "--metrics-port", "0",
                "--console-port", str(self.console_port) if self.console_port is not None else "none",
                "--set", "group.initial.rebalance.delay.ms=0", *listeners, *self.extra_args]

    def _readiness_listener(self) -> tuple[int, bool]:
        """(port, over TLS) of the listener readiness is checked on: one without TLS if any."""
        if not self.listeners:
            return self.port, False
        for name, port in self.listeners.items():
            if name not in ("SSL", "SASL_SSL"):
                return port, False
        return next(iter(self.listeners.values())), True

    def start(self, timeout: float = 30.0, *, wait: bool = True) -> BrokerProcess:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self._log_fh = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for key in [k for k in env if k.startswith("KBROKER_") and k != PURE_PYTHON_ENV]:
            env.pop(key)  # the broker's settings come from the command line; which code runs is passed on
        self.proc = subprocess.Popen(self.command(), cwd=self.cwd, stdout=self._log_fh,
                                     stderr=subprocess.STDOUT, env=env)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        port, tls = self._readiness_listener()
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode} during start:\n{self.log_tail()}")
            try:
                if _api_versions_ok(self.host, port, tls=tls):
                    return
            except (OSError, ConnectionError, ValueError) as exc:
                last = exc
            time.sleep(0.05)
        raise RuntimeError(f"broker not serving on {self.bootstrap_servers} after {timeout}s ({last}):\n"
                           f"{self.log_tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it was not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"broker ignored SIGTERM for {timeout}s:\n{self.log_tail()}") from None
        self._close_log()
        return self.proc.returncode

    def kill9(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.stop()


class KBrokerCluster:
    """etcd and ``size`` brokers (node ids 1..size) as real processes on 127.0.0.1.

    ``settings`` are passed to every broker as ``--set key=value``; by default the
    offsets and transaction state topics are replicated to ``min(3, size)`` brokers.
    ``etcd_members`` > 1 runs an :class:`EtcdCluster` of that many members instead of one etcd;
    ``per_broker`` adds settings of single brokers (``{1: {"broker.rack": "a"}}``).
    """

    def __init__(self, size: int, directory: str | os.PathLike[str], *, settings: dict[str, Any] | None = None,
                 cluster_id: str = "kbroker", etcd: EtcdServer | EtcdCluster | None = None,
                 listeners: Sequence[str] | None = None, etcd_members: int = 1,
                 per_broker: dict[int, dict[str, Any]] | None = None, console: bool = False) -> None:
        self.size = size
        self.directory = Path(directory)
        self.cluster_id = cluster_id
        self.settings = {"offsets.topic.replication.factor": min(3, size),
                         "transaction.state.log.replication.factor": min(3, size), **(settings or {})}
        self._own_etcd = etcd is None
        self.etcd: EtcdServer | EtcdCluster = etcd or (
            EtcdCluster(self.directory / "etcd", etcd_members) if etcd_members > 1 else EtcdServer(self.directory / "etcd"))
        self.listeners = listeners
        #: every broker serves the web console (each on a free port: ``brokers[n].console_url``)
        self.console = console
        self.brokers: dict[int, BrokerProcess] = {}
        for node in range(1, size + 1):
            self.brokers[node] = self._broker(node, (per_broker or {}).get(node))

    def _broker(self, node: int, settings: dict[str, Any] | None = None) -> BrokerProcess:
        args = ["--node-id", str(node), "--cluster", self.etcd.url, "--set", f"cluster.id={self.cluster_id}"]
        for key, value in {**self.settings, **(settings or {})}.items():
            args += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
        return BrokerProcess(self.directory / f"data-{node}", extra_args=args, listeners=self.listeners,
                             console=self.console)

    def add_broker(self, node: int, *, settings: dict[str, Any] | None = None, timeout: float = 60.0) -> BrokerProcess:
        """Start a new broker ``node`` (a new id, an empty data directory) that joins the cluster."""
        assert node not in self.brokers, f"broker {node} exists"
        broker = self.brokers[node] = self._broker(node, settings)
        broker.start(timeout)
        return broker

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.alive()) or \
            ",".join(b.bootstrap_servers for b in self.brokers.values())

    def bootstrap(self, listener: str) -> str:
        """The live brokers' addresses on ``listener``."""
        alive = [b for b in self.brokers.values() if b.alive()] or list(self.brokers.values())
        return ",".join(b.bootstrap(listener) for b in alive)

    def start(self, timeout: float = 60.0) -> KBrokerCluster:
        if self._own_etcd and not self.etcd.running:
            self.etcd.start()
        for b in self.brokers.values():
            b.start(wait=False)
        for b in self.brokers.values():
            b.wait_ready(timeout)
        return self

    def kill(self, node: int) -> None:
        """SIGKILL broker ``node`` (no shutdown: its registration expires after the session timeout)."""
        self.brokers[node].kill9()

    def stop_broker(self, node: int) -> int | None:
        """SIGTERM broker ``node`` (a controlled shutdown)."""
        return self.brokers[node].stop()

    def restart(self, node: int, timeout: float = 60.0) -> None:
        b = self.brokers[node]
        if b.alive():
            b.stop()
        b.start(timeout)

    def stop(self) -> None:
        for b in self.brokers.values():
            if b.alive():
                try:
                    b.stop()
                except AssertionError:
                    pass
        if self._own_etcd:
            self.etcd.stop()

    def __enter__(self) -> KBrokerCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
