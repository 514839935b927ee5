"""Fixtures of the container tests (``make test-container``): podman configured for these machines,
the Dockerfiles' base images stood in for locally, the project's image built from its Dockerfile as
it is, and podman's API socket for docker-compose.  How long each phase took and the image's size are
printed at the end of the run."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_env import (
    ETCD,
    HERE,
    IMAGE,
    PROMETHEUS,
    ROOT,
    SPARK,
    TIMINGS,
    BackgroundBuilds,
    Podman,
    PodmanService,
    base_image_refs,
    ensure_base_images,
    machine_lock,
    timed,
)
from peers import require_tool

FACTS: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TIMINGS and not FACTS:
        return
    terminalreporter.section("container tests")
    for phase, seconds in TIMINGS:
        terminalreporter.write_line(f"{seconds:7.1f} s  {phase}")
    for fact in FACTS:
        terminalreporter.write_line(fact)


@pytest.fixture(scope="session")
def podman() -> Iterator[Podman]:
    """podman ready to build and run: the tools installed (tests/setup_tools.sh), one run per machine
    at a time, and the base images present."""
    for tool in ("podman", "runc", "mmdebstrap", "docker-compose"):
        require_tool(tool, "Debian packages podman, buildah, runc, fuse-overlayfs, uidmap, mmdebstrap, "
                           "docker-compose; tests/setup_tools.sh installs them")
    with machine_lock():
        engine = Podman()
        with timed("base images (present, imported or built)"):
            stood_in = ensure_base_images(engine, base_image_refs())
        if stood_in:
            FACTS.append(f"base images stood in for: {', '.join(stood_in)}")
        yield engine


@pytest.fixture(scope="session")
def image(podman: Podman) -> str:
    """The project's image, built from the Dockerfile as it is."""
    podman.build(IMAGE)
    size = podman.image_size(IMAGE)
    base = podman.image_size("docker.io/library/python:3.11-slim")
    FACTS.append(f"image {IMAGE}: {size / 1e6:.0f} MB ({(size - base) / 1e6:.0f} MB over its base's "
                 f"{base / 1e6:.0f} MB)")
    return IMAGE


@pytest.fixture(scope="session", autouse=True)
def stack_images(podman: Podman, image: str) -> Iterator[BackgroundBuilds]:
    """The other images the compose stacks use, built while the image's own tests run (compose's
    ``up --build`` then finds every layer built): etcd, the Prometheus stand-in, the Spark stage."""
    builds = BackgroundBuilds(podman)
    builds.start(ETCD, context=ROOT / "broker" / "deploy",
                 dockerfile=ROOT / "broker" / "deploy" / "etcd.Dockerfile")
    if podman.is_stand_in(PROMETHEUS):
        builds.start(PROMETHEUS, context=HERE, dockerfile=HERE / "prometheus.Dockerfile")
    builds.start(SPARK, target="spark")
    try:
        yield builds
    finally:
        builds.join()


@pytest.fixture(scope="session")
def podman_service(podman: Podman) -> Iterator[PodmanService]:
    with tempfile.TemporaryDirectory(prefix="kbroker-podman-") as tmp:
        service = PodmanService(podman, Path(tmp))
        try:
            yield service
        finally:
            service.stop()


@pytest.fixture(scope="session")
def run_id() -> str:
    """A prefix for this run's container, volume and project names."""
    return f"kbt{os.getpid()}"
