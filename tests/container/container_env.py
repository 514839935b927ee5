"""Podman on these machines, for the container tests: configuration, base images, builds, compose.

What it owns:

* :class:`Podman`: the ``podman`` command with ``containers.conf`` of this directory (runc, cgroupfs,
  file limits, host networking), and the healthcheck runs podman cannot schedule without systemd;
* :func:`ensure_base_images`: no image registry is reachable, so the ``FROM`` images of the
  Dockerfiles (``python:3.11-slim``, ``debian:bookworm-slim``) are stood in for by one local image:
  Debian bookworm with python3, made by ``mmdebstrap`` from the machine's own apt sources (the
  host's CA certificates and pip index settings included, so pip inside builds reaches the index the
  way the host does), then ``podman import``-ed under every tag the Dockerfiles name.  The tarball
  is cached between runs (``$KBROKER_CONTAINER_CACHE``, default ``~/.cache/kbroker-container``); the
  pip wheels stay in the build's cache mount and the layers in podman's storage, so a second run
  rebuilds nothing that did not change;
* :class:`BackgroundBuilds`: images built in a thread while other tests run;
* :class:`Compose`: Debian's ``docker-compose`` against podman's API socket (``podman system
  service``), with a thread playing systemd's healthcheck timer while services start;
* :data:`TIMINGS`: how long each phase took (printed at the end of the run).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONTAINERS_CONF = HERE / "containers.conf"
CUSTOMIZE_HOOK = HERE / "base_customize.sh"
#: the Dockerfiles whose base images the tests stand in for
DOCKERFILES = (ROOT / "Dockerfile", ROOT / "broker" / "deploy" / "etcd.Dockerfile", HERE / "prometheus.Dockerfile")
#: the images docker-compose.yml names (the broker's, the Spark stage, etcd), as podman names them
IMAGE, SPARK, ETCD = "localhost/kbroker:latest", "localhost/kbroker-spark:latest", "localhost/kbroker-etcd:latest"
#: docker-compose.yml's Prometheus image, stood in for by Debian's package unless a real one is here
PROMETHEUS = "docker.io/prom/prometheus:latest"
BASE_RELEASE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates")
#: what Debian's slim images leave out (dpkg path filters, kept in the image for later installs)
SLIM_DPKG_OPTS = ("path-exclude=/usr/share/man/*", "path-exclude=/usr/share/locale/*",
                  "path-include=/usr/share/locale/locale.alias", "path-exclude=/usr/share/doc/*",
                  "path-include=/usr/share/doc/*/copyright", "path-exclude=/usr/share/info/*")
BASE_LABEL = "org.kbroker.test-base"
STAND_IN_LABEL = "org.kbroker.test-standin"
#: the host's apt settings the base's apt must share (proxies, a frozen archive's validity checks)
APT_OPTIONS = re.compile(r"^Acquire::(https?::Proxy|Check-Valid-Until|Check-Date)\b", re.I)

TIMINGS: list[tuple[str, float]] = []


@contextlib.contextmanager
def timed(phase: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        TIMINGS.append((phase, time.monotonic() - start))


def cache_dir() -> Path:
    configured = os.environ.get("KBROKER_CONTAINER_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbroker-container"


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    """One container test run at a time on a machine: the compose stacks listen on fixed ports."""
    path = Path(tempfile.gettempdir()) / "kbroker-container-tests.lock"
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no user
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Podman:
    """``podman`` with the tests' containers.conf."""

    def __init__(self) -> None:
        self.env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}

    def run(self, *args: str, check: bool = True, timeout: float = 120,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              input=stdin)
        if check and proc.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                                 f"\n{proc.stderr[-3000:]}")
        return proc

    def out(self, *args: str, timeout: float = 120) -> str:
        return self.run(*args, timeout=timeout).stdout.strip()

    def exists(self, image: str) -> bool:
        return self.run("image", "exists", image, check=False).returncode == 0

    def inspect(self, kind: str, name: str) -> dict[str, Any]:
        data = json.loads(self.out(kind, "inspect", name))
        return data[0] if isinstance(data, list) else data

    def logs(self, name: str) -> str:
        proc = self.run("logs", name, check=False)
        return proc.stdout + proc.stderr

    def state(self, name: str) -> dict[str, Any]:
        return self.inspect("container", name)["State"]

    def healthcheck(self, name: str) -> bool:
        return self.run("healthcheck", "run", name, check=False, timeout=30).returncode == 0

    def build(self, tag: str, *, context: Path = ROOT, dockerfile: Path | None = None,
              target: str | None = None, timeout: float = 1200) -> str:
        """``podman build`` as a user would (the Dockerfile unchanged): the docker format keeps the
        HEALTHCHECK; host networking; never pulls (no registry). Returns the build's output."""
        args = ["build", "--format", "docker", "--network", "host", "--pull=never", "-t", tag]
        if dockerfile is not None:
            args += ["-f", str(dockerfile)]
        if target is not None:
            args += ["--target", target]
        with timed(f"build {tag}"):
            proc = self.run(*args, str(context), timeout=timeout)
        return proc.stdout + proc.stderr

    def is_stand_in(self, image: str) -> bool:
        """True unless ``image`` is here and is not one of the tests' stand-ins (a real one, pulled)."""
        if not self.exists(image):
            return True
        labels = self.inspect("image", image)["Config"].get("Labels") or {}
        return STAND_IN_LABEL in labels

    def image_size(self, image: str) -> int:
        return int(self.inspect("image", image)["Size"])

    @contextlib.contextmanager
    def health_timer(self, name_pattern: str, interval: float = 1.0) -> Iterator[None]:
        """Run the healthchecks of the starting containers whose names match ``name_pattern`` every
        ``interval`` seconds (systemd timers do this where podman has systemd)."""
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(interval):
                proc = self.run("ps", "-q", "--filter", f"name={name_pattern}", "--filter", "health=starting",
                                check=False, timeout=30)
                for container in proc.stdout.split():
                    self.healthcheck(container)

        thread = threading.Thread(target=tick, name="health-timer", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=60)


class BackgroundBuilds:
    """Image builds in a thread, one after the other, while tests run; ``wait()`` before using them."""

    def __init__(self, podman: Podman) -> None:
        self.podman = podman
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._errors: dict[str, BaseException] = {}
        self._done: dict[str, threading.Event] = {}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, tag: str, **build: Any) -> None:
        with self._lock:
            self._done[tag] = threading.Event()
            self._queue.append((tag, build))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="image-builds", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                tag, build = self._queue.pop(0)
            try:
                self.podman.build(tag, **build)
            except BaseException as exc:
                self._errors[tag] = exc
            finally:
                self._done[tag].set()

    def wait(self, *tags: str, timeout: float = 1800) -> None:
        for tag in tags or list(self._done):
            with timed(f"waiting for the build of {tag}"):
                assert self._done[tag].wait(timeout), f"the build of {tag} took over {timeout} s"
            if tag in self._errors:
                raise AssertionError(f"building {tag} failed: {self._errors[tag]}")

    def join(self) -> None:
        for event in list(self._done.values()):
            event.wait(1800)


# -- the base images ---------------------------------------------------------------------------------------


def _qualified(ref: str) -> str:
    """``python:3.11-slim`` -> ``docker.io/library/python:3.11-slim`` (how podman names pulled images)."""
    first = ref.split("/", 1)[0]
    if "/" not in ref:
        return f"docker.io/library/{ref}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{ref}"
    return ref


def base_image_refs(dockerfiles: Sequence[Path] = DOCKERFILES) -> list[str]:
    """Every image a ``FROM`` line of ``dockerfiles`` names that is not one of their build stages."""
    refs: list[str] = []
    for path in dockerfiles:
        stages: set[str] = set()
        for line in path.read_text().splitlines():
            match = re.match(r"\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
            if not match:
                continue
            image, stage = match.group(1), match.group(2)
            if image.lower() not in stages and _qualified(image) not in refs:
                refs.append(_qualified(image))
            if stage:
                stages.add(stage.lower())
    return refs


def host_apt_sources(release: str = BASE_RELEASE) -> tuple[str, str]:
    """The host's enabled Debian ``release`` sources: (deb822 stanzas, one-line entries)."""
    stanzas: list[str] = []
    lines: list[str] = []
    sources = Path("/etc/apt/sources.list.d")
    for path in [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list")), *sorted(sources.glob("*.sources"))]:
        if not path.is_file():
            continue
        text = path.read_text()
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
                suites = fields.get("Suites", "").split()
                if ("deb" in fields.get("Types", "").split() and fields.get("Enabled", "yes").lower() != "no"
                        and any(s == release or s.startswith(f"{release}-") for s in suites)):
                    stanzas.append("\n".join(ln for ln in stanza.strip().splitlines() if not ln.startswith("#")))
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line).split()
                if parts[:1] == ["deb"] and len(parts) >= 3 and (parts[2] == release
                                                                 or parts[2].startswith(f"{release}-")):
                    lines.append(line.strip())
    return "\n\n".join(stanzas) + ("\n" if stanzas else ""), "\n".join(lines) + ("\n" if lines else "")


def host_apt_options() -> list[str]:
    proc = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, timeout=30)
    return [line.rstrip(";") for line in proc.stdout.splitlines() if APT_OPTIONS.match(line)]


def host_pip_conf() -> str:
    """The host's package-index settings for the base's /etc/pip.conf (http(s) indexes only: a
    file:// index on the host's disk is not inside the build)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          timeout=60)
    settings: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"^[^.]*\.(index-url|extra-index-url|trusted-host)='(.*)'$", line)
        if match:
            kept = [v for v in match.group(2).split() if match.group(1) == "trusted-host" or v.startswith("http")]
            if kept:
                settings.setdefault(match.group(1), []).extend(kept)
    if not settings:
        return ""
    return "[global]\n" + "".join(f"{key} = {' '.join(dict.fromkeys(values))}\n" for key, values in settings.items())


def _extra_ca_certificates() -> bytes:
    return b"".join(p.read_bytes() for p in sorted(Path("/usr/local/share/ca-certificates").glob("*.crt")))


class BaseRecipe:
    """The mmdebstrap command of the base image and the key naming its result (its inputs' hash)."""

    def __init__(self) -> None:
        self.deb822, self.one_line = host_apt_sources()
        if not (self.deb822 or self.one_line):
            raise AssertionError(f"no Debian {BASE_RELEASE} entry in the host's apt sources (/etc/apt)")
        self.apt_options = host_apt_options()
        self.pip_conf = host_pip_conf()
        digest = hashlib.sha256()
        for part in (" ".join(self.options()), CUSTOMIZE_HOOK.read_text(), self.deb822, self.one_line,
                     self.pip_conf):
            digest.update(part.encode() + b"\0")
        digest.update(_extra_ca_certificates())
        self.key = digest.hexdigest()[:16]

    def options(self) -> list[str]:
        return ["--variant=minbase", "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
                *(f"--dpkgopt={o}" for o in SLIM_DPKG_OPTS), *(f"--aptopt={o}" for o in self.apt_options),
                f"--include={','.join(BASE_PACKAGES)}"]

    def build(self, tarball: Path, log: IO[str]) -> None:
        with tempfile.TemporaryDirectory(prefix="kbroker-base-") as tmp:
            mirrors = []
            for name, text in (("debian.sources", self.deb822), ("debian.list", self.one_line)):
                if text:
                    (Path(tmp) / name).write_text(text)
                    mirrors.append(str(Path(tmp) / name))
            hooks = [f"--customize-hook={CUSTOMIZE_HOOK}"]
            if self.pip_conf:
                (Path(tmp) / "pip.conf").write_text(self.pip_conf)
                hooks.append(f"--customize-hook=copy-in {Path(tmp) / 'pip.conf'} /etc")
            partial = tarball.with_suffix(".partial.tar")
            proc = subprocess.run(["mmdebstrap", *self.options(), *hooks, BASE_RELEASE, str(partial), *mirrors],
                                  stdout=log, stderr=subprocess.STDOUT, text=True, timeout=1200)
            if proc.returncode != 0:
                partial.unlink(missing_ok=True)
                raise AssertionError(f"mmdebstrap exited {proc.returncode} (log: {log.name})")
            partial.rename(tarball)


def ensure_base_images(podman: Podman, refs: Sequence[str]) -> list[str]:
    """Make every one of ``refs`` exist locally; returns the ones stood in for by our base image.

    An image under one of those tags that is not ours (a real one, pulled where a registry is
    reachable) is left as it is; ours is replaced when its recipe changed."""
    recipe = BaseRecipe()
    missing = []
    for ref in refs:
        if podman.exists(ref):
            label = (podman.inspect("image", ref).get("Config") or {}).get("Labels") or {}
            if BASE_LABEL not in label or label[BASE_LABEL] == recipe.key:
                continue
        missing.append(ref)
    if not missing:
        return []
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"base-{BASE_RELEASE}-{recipe.key}.tar"
    if not tarball.exists():
        with timed("mmdebstrap base image (cold cache)"), open(cache / "mmdebstrap.log", "w") as log:
            recipe.build(tarball, log)
        for old in cache.glob(f"base-{BASE_RELEASE}-*.tar"):
            if old != tarball:
                old.unlink()
    with timed("podman import base image"):
        podman.run("import", "--change", "CMD [\"python3\"]", "--change", "ENV LANG=C.UTF-8",
                   "--change", f"LABEL {BASE_LABEL}={recipe.key}", str(tarball), missing[0], timeout=600)
        for ref in missing[1:]:
            podman.run("tag", missing[0], ref)
    for ref in missing:
        version = re.match(r".*/python:(\d+\.\d+)", ref)
        if version:
            actual = podman.out("run", "--rm", ref, "python", "-c",
                                "import sys; print('%d.%d' % sys.version_info[:2])")
            assert actual == version.group(1), (
                f"{ref} is stood in for by Debian {BASE_RELEASE}, whose python3 is {actual}: no match")
    return missing


# -- compose -----------------------------------------------------------------------------------------------


class PodmanService:
    """``podman system service`` on a private socket: the Docker API docker-compose talks to."""

    def __init__(self, podman: Podman, directory: Path) -> None:
        self.podman = podman
        self.socket = directory / "podman.sock"
        self.log = open(directory / "podman-service.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{self.socket}"],
                                     env=podman.env, stdout=self.log, stderr=subprocess.STDOUT)

        def answering() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"podman system service exited {self.proc.returncode}")
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(str(self.socket))
                    s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
                    return b"OK" in s.recv(4096)
                except OSError:
                    return False

        wait_until(answering, 30, "podman's API socket")

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.log.close()


class Compose:
    """``docker-compose -p PROJECT -f docker-compose.yml -f docker-compose.host.yml [--profile ...]``."""

    FILES = ("docker-compose.yml", "docker-compose.host.yml")

    def __init__(self, podman: Podman, service: PodmanService, project: str, profiles: Sequence[str] = ()) -> None:
        self.podman = podman
        self.project = project
        self.env = {**podman.env, "DOCKER_HOST": service.url, "COMPOSE_INTERACTIVE_NO_CLI": "1"}
        self.base = ["docker-compose", "-p", project, *(a for f in self.FILES for a in ("-f", str(ROOT / f))),
                     *(a for p in profiles for a in ("--profile", p))]

    def run(self, *args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*self.base, *args], env=self.env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)} exited {proc.returncode}:\n"
                                 f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def up(self, *services: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``up -d --build`` while the healthchecks of this project's containers are run."""
        with self.podman.health_timer(f"^{self.project}_"), timed(f"compose up {self.project} {' '.join(services)}"):
            return self.run("up", "-d", "--build", *services, timeout=timeout)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def volume(self, name: str) -> Path:
        return Path(self.podman.inspect("volume", f"{self.project}_{name}")["Mountpoint"])

    def down(self) -> None:
        self.run("down", "-v", "--remove-orphans", "--timeout", "20", check=False, timeout=300)

    def logs(self) -> str:
        proc = self.run("logs", "--no-color", "--tail", "40", check=False, timeout=120)
        return proc.stdout[-8000:]
