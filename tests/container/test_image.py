"""The broker image, built and run with podman: what a user of ``docker run kbroker`` gets.

One container (host networking, listener and metrics on free ports of 127.0.0.1, data in a named
volume) serves confluent-kafka and our client with the compiled record codec, keeps its data across
``podman restart``, stops on ``podman stop`` with exit code 0 well within the grace period and
starts again with nothing to repair, passes its HEALTHCHECK, and has the admin CLI inside.  Other
containers of the same image check the image itself (non-root, no compiler, small) and that the
``KBROKER_*`` variables and flags configure it as the README says.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from container_env import Podman, wait_until
from prometheus_client.parser import text_string_to_metric_families
from traffic import confluent_produce, confluent_read, create_topic, ours_produce, ours_read, values

from broker.testing.harness import free_port

pytestmark = pytest.mark.timeout(1800)

STOP_GRACE = 30  # seconds podman waits after SIGTERM before SIGKILL
LISTENING = re.compile(r"kbroker node \d+ listening on .*, record codec (\w+)")


@dataclass
class Broker:
    name: str
    port: int
    metrics_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def run_broker(podman: Podman, image: str, name: str, *, env: dict[str, str] | None = None,
               args: tuple[str, ...] = (), volume: str | None = None) -> None:
    options = ["--network", "host", "--name", name]
    for key, value in (env or {}).items():
        options += ["-e", f"{key}={value}"]
    if volume:
        options += ["-v", f"{volume}:/data"]
    podman.run("run", "-d", *options, image, *args)


def starts(podman: Podman, name: str) -> int:
    """How many times the broker in ``name`` has said it is listening."""
    return len(LISTENING.findall(podman.logs(name)))


def wait_listening(podman: Podman, name: str, times: int = 1, timeout: float = 60) -> None:
    def listening() -> bool:
        if podman.state(name)["Status"] not in ("running", "created", "configured", "initialized"):
            raise AssertionError(f"{name} is {podman.state(name)['Status']}:\n{podman.logs(name)[-3000:]}")
        return starts(podman, name) >= times

    wait_until(listening, timeout, f"{name} to listen (start {times})")


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


@pytest.fixture(scope="module")
def broker(podman: Podman, image: str, run_id: str) -> Iterator[Broker]:
    name, volume = f"{run_id}-broker", f"{run_id}-data"
    port, metrics_port = free_port(), free_port()
    podman.run("volume", "create", volume)
    try:
        run_broker(podman, image, name, volume=volume, env={
            "KBROKER_HOST": "127.0.0.1", "KBROKER_PORT": str(port),
            "KBROKER_ADVERTISED_LISTENER": f"127.0.0.1:{port}",
            "KBROKER_METRICS_HOST": "127.0.0.1", "KBROKER_METRICS_PORT": str(metrics_port)})
        wait_listening(podman, name)
        yield Broker(name, port, metrics_port)
    finally:
        podman.run("rm", "-f", "-v", "-t", "5", name, check=False)
        podman.run("volume", "rm", "-f", volume, check=False)


def test_image_runs_as_non_root_without_a_compiler_and_carries_the_compiled_codec(podman: Podman, image: str):
    config = podman.inspect("image", image)["Config"]
    assert config["User"] == "kbroker"
    out = podman.out("run", "--rm", "--network", "host", "--entrypoint", "sh", image, "-c",
                     "id -u; id -un; for cc in gcc cc c99 x86_64-linux-gnu-gcc-12 clang; do "
                     "command -v $cc; done; true")
    uid, user, *compilers = out.splitlines()
    assert uid != "0" and user == "kbroker"
    assert compilers == [], f"the runtime image has a compiler: {compilers}"
    probe = ("import protocol.records as r, protocol._crecords as c, sys; "
             "print(r.COMPILED, c.__file__, sys.version_info[:2] >= (3, 11))")
    compiled, path, version_ok = podman.out("run", "--rm", "--network", "host", "--entrypoint", "python",
                                            image, "-c", probe).split()
    assert compiled == "True" and path.endswith(".so") and version_ok == "True", (compiled, path)
    # the wheels the image was built from: ours is platform-specific, as a wheel with an extension is
    wheels = podman.out("run", "--rm", "--network", "host", "--entrypoint", "cat", image,
                        "/usr/local/share/kbroker/wheels.sha256")
    assert re.search(r"kbroker-[\w.]+-cp3\d+-cp3\d+-linux_\w+\.whl", wheels), wheels
    # small: what the image adds to its base is the project and its dependencies, no build tools
    added = podman.image_size(image) - podman.image_size("docker.io/library/python:3.11-slim")
    assert added < 100e6, f"the image adds {added / 1e6:.0f} MB to its base"


def test_confluent_kafka_and_our_client_with_the_compiled_codec(podman: Podman, broker: Broker):
    assert LISTENING.search(podman.logs(broker.name)).group(1) == "compiled"
    metrics = scrape(broker.metrics_port)
    assert metrics["kbroker_record_codec_info"] == [({"codec": "compiled"}, 1.0)]

    create_topic(broker.bootstrap, "both", 3)
    confluent_produce(broker.bootstrap, "both", values("ck", 3000))
    ours_produce(broker.bootstrap, "both", values("ours", 3000))
    expected = sorted(values("ck", 3000) + values("ours", 3000))
    assert sorted(confluent_read(broker.bootstrap, "both", 6000)) == expected
    assert sorted(ours_read(broker.bootstrap, "both", 6000)) == expected
    # the broker decoded and counted them (the compiled codec validated every batch)
    assert sum(v for labels, v in scrape(broker.metrics_port)["kbroker_messages_in_total"]
               if labels["topic"] == "both") == 6000


def test_healthcheck_passes_and_fails_when_nothing_listens(podman: Podman, image: str, broker: Broker,
                                                           run_id: str):
    assert podman.healthcheck(broker.name)
    assert podman.state(broker.name)["Health"]["Status"] == "healthy"
    # the probe can fail: the same image with no broker listening
    idle = f"{run_id}-idle"
    podman.run("run", "-d", "--network", "host", "--name", idle, "--entrypoint", "sleep", "-e",
               f"KBROKER_PORT={free_port()}", image, "120")
    try:
        assert not podman.healthcheck(idle)
    finally:
        podman.run("rm", "-f", "-v", "-t", "0", idle, check=False)


def test_the_cli_inside_the_image(podman: Podman, broker: Broker):
    def cli(*args: str, stdin: str | None = None) -> str:
        return podman.run("exec", *(["-i"] if stdin is not None else []), broker.name, "kbroker",
                          "-b", broker.bootstrap, *args, stdin=stdin).stdout

    cli("topics", "create", "cli", "--partitions", "2")
    assert "cli" in cli("topics", "list").split()
    cli("produce", "cli", stdin="".join(f"line-{i}\n" for i in range(100)))
    lines = cli("consume", "cli", "--offset", "beginning", "--exit").split()
    assert sorted(lines) == sorted(f"line-{i}" for i in range(100))
    described = json.loads(cli("cluster", "describe", "--json"))
    assert [b["port"] for b in described["brokers"]] == [broker.port]


def test_data_survives_podman_restart(podman: Podman, broker: Broker):
    create_topic(broker.bootstrap, "kept", 2)
    ours_produce(broker.bootstrap, "kept", values("kept", 2000))
    before = starts(podman, broker.name)
    podman.run("restart", "-t", str(STOP_GRACE), broker.name, timeout=STOP_GRACE + 60)
    wait_listening(podman, broker.name, before + 1)
    assert sorted(confluent_read(broker.bootstrap, "kept", 2000)) == values("kept", 2000)


def test_stop_exits_0_within_the_grace_period_and_restarts_with_nothing_to_repair(podman: Podman,
                                                                                    broker: Broker):
    create_topic(broker.bootstrap, "stopped", 1)
    confluent_produce(broker.bootstrap, "stopped", values("stopped", 5000))
    before = starts(podman, broker.name)
    started = time.monotonic()
    podman.run("stop", "-t", str(STOP_GRACE), broker.name, timeout=STOP_GRACE + 60)
    took = time.monotonic() - started
    state = podman.state(broker.name)
    logs = podman.logs(broker.name)
    assert state["Status"] == "exited" and state["ExitCode"] == 0, (state, logs[-2000:])
    assert took < STOP_GRACE / 2, f"podman stop took {took:.1f} s (SIGKILL comes at {STOP_GRACE} s)"
    assert logs.rstrip().endswith("stopped"), logs[-2000:]

    podman.run("start", broker.name)
    wait_listening(podman, broker.name, before + 1)
    last_start = podman.logs(broker.name).rsplit("shutting down", 1)[1]
    assert "recovered" not in last_start and "WARNING" not in last_start, last_start[-3000:]
    assert confluent_read(broker.bootstrap, "stopped", 5000) == values("stopped", 5000)


def test_environment_and_flags_configure_it_as_the_readme_says(podman: Podman, image: str, run_id: str):
    name = f"{run_id}-env"
    port, metrics_port = free_port(), free_port()
    run_broker(podman, image, name, args=("--set", "num.partitions=6"), env={
        "KBROKER_HOST": "127.0.0.1", "KBROKER_PORT": str(port), "KBROKER_ADVERTISED_LISTENER": f"127.0.0.1:{port}",
        "KBROKER_METRICS_HOST": "127.0.0.1", "KBROKER_METRICS_PORT": str(metrics_port),
        "KBROKER_LOG_RETENTION_MS": "3600000", "KBROKER_LOG_FORMAT": "json"})
    try:
        wait_listening(podman, name)
        # KBROKER_LOG_FORMAT=json: every line is a JSON object
        records = [json.loads(ln) for ln in podman.logs(name).splitlines() if ln.strip()]
        assert any("record codec compiled" in r["msg"] for r in records), records[-3:]
        assert scrape(metrics_port)["kbroker_record_codec_info"] == [({"codec": "compiled"}, 1.0)]
        bootstrap = f"127.0.0.1:{port}"
        described = podman.out("exec", name, "kbroker", "-b", bootstrap, "configs", "describe", "--broker", "1",
                               "--all")
        assert re.search(r"^\s*log\.retention\.ms=3600000 \(STATIC_BROKER_CONFIG\)", described, re.M), described
        ours_produce(bootstrap, "auto", values("auto", 10))  # created by the first produce: num.partitions
        topics = podman.out("exec", name, "kbroker", "-b", bootstrap, "topics", "describe", "auto")
        assert re.search(r"PartitionCount:\s*6\b", topics), topics
    finally:
        podman.run("rm", "-f", "-v", "-t", "5", name, check=False)

    # a KBROKER_* variable that is no setting: exit code 2 and the variable named
    bad = f"{run_id}-bad"
    podman.run("run", "--network", "host", "--name", bad, "-e", "KBROKER_NO_SUCH_SETTING=1", image, check=False)
    try:
        wait_until(lambda: podman.state(bad)["Status"] == "exited", 60, f"{bad} to exit")
        assert podman.state(bad)["ExitCode"] == 2
        assert "KBROKER_NO_SUCH_SETTING" in podman.logs(bad)
    finally:
        podman.run("rm", "-f", "-v", bad, check=False)
