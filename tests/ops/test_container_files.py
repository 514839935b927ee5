"""Dockerfile, the compose files and the Prometheus configs, checked structurally (no engine, fast).

The image is a slim Python running ``python -m broker`` as a non-root user with a data volume and
a healthcheck, its compiled record codec built in a build stage; every file the build copies and
every path, module and flag compose names exists; every ``KBROKER_*`` variable is a real
:class:`~broker.config.settings.BrokerConfig` setting; the host-network override puts every service on
127.0.0.1.  ``tests/container`` builds and runs all of it with podman.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from mini_yaml import loads as load_yaml

from broker.config.loader import from_env
from broker.config.settings import ENV_PREFIX, BrokerConfig
from broker.core import load_config

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {f.name for f in dataclasses.fields(BrokerConfig) if f.name != "extra"}


# -- Dockerfile parsing --------------------------------------------------------------------------


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        op, _, args = current.strip().partition(" ")
        out.append((op.upper(), args.strip()))
        current = ""
    assert not current, f"dangling continuation in {path}"
    return out


def exec_form(args: str) -> list[str] | None:
    args = args.strip()
    if args.startswith("["):
        value = json.loads(args)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value)
        return value
    return None


def env_pairs(args: str) -> dict[str, str]:
    tokens = shlex.split(args)
    if len(tokens) >= 2 and "=" not in tokens[0]:  # legacy "ENV KEY value"
        return {tokens[0]: " ".join(tokens[1:])}
    return dict(t.split("=", 1) for t in tokens)


def stages(instructions: list[tuple[str, str]]) -> list[tuple[str | None, list[tuple[str, str]]]]:
    """``(stage name or None, its instructions)`` per ``FROM``, in order (the last one is the default target)."""
    out: list[tuple[str | None, list[tuple[str, str]]]] = []
    for op, args in instructions:
        if op == "FROM":
            match = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", args, re.I)
            assert match, args
            out.append((match.group(2), [(op, args)]))
        else:
            assert out, f"{op} before FROM"
            out[-1][1].append((op, args))
    return out


def check_copies(instructions: list[tuple[str, str]], context: Path) -> list[str]:
    sources: list[str] = []
    stage_names: set[str] = set()
    for op, args in instructions:
        if op == "FROM" and re.search(r"\sAS\s", args, re.I):
            stage_names.add(args.split()[-1])
        if op not in ("COPY", "ADD"):
            continue
        from_stage = re.search(r"--from=(\S+)", args)
        if from_stage:  # out of an earlier stage, not the build context
            assert from_stage.group(1) in stage_names, f"{op} {args}: no earlier stage {from_stage.group(1)!r}"
            continue
        parts = exec_form(args) or [p for p in shlex.split(args) if not p.startswith("--")]
        assert len(parts) >= 2, args
        for src in parts[:-1]:
            assert not src.startswith(("http://", "https://")), f"remote {op} {src}"
            matches = list(context.glob(src)) if any(c in src for c in "*?[") else [context / src]
            assert matches and all(m.exists() for m in matches), f"{op} source {src!r} does not exist in {context}"
            sources.append(src)
    return sources


def dockerignore_patterns(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.exists():
        return []
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def ignored(name: str, patterns: list[str]) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(name, p.lstrip("/")) for p in patterns if not p.startswith("!"))


# -- the broker image ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return dockerfile_instructions(ROOT / "Dockerfile")


def test_broker_image_base_user_volume_healthcheck_entrypoint(dockerfile):
    ops = [op for op, _ in dockerfile]
    froms = [args for op, args in dockerfile if op == "FROM"]
    assert froms and re.fullmatch(r"python:3\.(1[1-9])(\.\d+)?-slim(-\w+)?( AS \w+)?", froms[-1], re.I), froms

    users = [args for op, args in dockerfile if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), users
    # the user exists: created before it is switched to
    last_user = ops.index("USER") if "USER" in ops else -1
    assert any(op == "RUN" and re.search(rf"useradd\b.*\b{re.escape(users[-1])}\b", args)
               for op, args in dockerfile[:last_user]), "USER is never created"
    # nothing runs as root after the switch
    assert "RUN" not in ops[len(ops) - 1 - ops[::-1].index("USER"):]

    env: dict[str, str] = {}
    for op, args in dockerfile:
        if op == "ENV":
            env.update(env_pairs(args))
    volumes = [v for op, args in dockerfile if op == "VOLUME" for v in (exec_form(args) or args.split())]
    assert env["KBROKER_DATA_DIR"] in volumes, (env.get("KBROKER_DATA_DIR"), volumes)
    # the data dir is owned by the runtime user
    assert any(op == "RUN" and "chown" in args and env["KBROKER_DATA_DIR"] in args and users[-1].split(":")[0] in args
               for op, args in dockerfile)

    health = [args for op, args in dockerfile if op == "HEALTHCHECK"]
    assert len(health) == 1 and " CMD " in f" {health[0]} "
    cmd = health[0].split(" CMD ", 1)[1] if " CMD " in health[0] else health[0].split("CMD ", 1)[1]
    tokens = exec_form(cmd) or shlex.split(cmd)
    assert tokens[:2] == ["python", "-c"], tokens
    compile(tokens[2], "<healthcheck>", "exec")  # the probe is valid Python
    assert "KBROKER_PORT" in tokens[2]

    entrypoints = [exec_form(args) for op, args in dockerfile if op == "ENTRYPOINT"]
    assert entrypoints and entrypoints[-1] == ["python", "-m", "broker"]

    exposed = {p.split("/")[0] for op, args in dockerfile if op == "EXPOSE" for p in args.split()}
    assert {env["KBROKER_PORT"], env["KBROKER_METRICS_PORT"]} <= exposed


def test_broker_image_builds_the_compiled_codec_and_ships_no_compiler(dockerfile):
    """A build stage with a C compiler makes the wheels (the compiled record codec's included); the
    runtime stage installs only those wheels, has no compiler, and refuses to build without the codec."""
    *earlier, (_, runtime) = stages(dockerfile)
    builders = [name for name, body in earlier
                if any(op == "RUN" and re.search(r"apt-get install .*\bgcc\b", args) for op, args in body)]
    assert builders, "no build stage installs a C compiler"
    assert any(op == "RUN" and "pip wheel" in args for name, body in earlier if name in builders for op, args in body)
    runtime_runs = " ".join(args for op, args in runtime if op == "RUN")
    assert not re.search(r"\b(gcc|g\+\+|clang|build-essential|cython)\b", runtime_runs, re.I), runtime_runs
    assert re.search(rf"--mount=type=bind,from=({'|'.join(builders)})\b", runtime_runs)
    assert "--no-index" in runtime_runs  # the wheels and nothing else
    assert "r.COMPILED" in runtime_runs  # the build fails when the codec is not in use
    assert "c.missing()" in runtime_runs  # ... or when a module of protocol/compiled.py runs as Python


def test_the_build_context_and_the_wheel_leave_out_what_the_build_generates():
    """The image compiles its own: neither host-built extensions nor the generated C reach it."""
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "**/*.so" in ignored and "protocol/*.c" in ignored and "broker/**/*.c" in ignored
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "*.c" in pyproject["tool"]["setuptools"]["exclude-package-data"]["*"]


def test_broker_image_env_maps_to_broker_config(dockerfile):
    env: dict[str, str] = {}
    for op, args in dockerfile:
        if op == "ENV":
            env.update(env_pairs(args))
    kbroker_env = {k: v for k, v in env.items() if k.startswith(ENV_PREFIX)}
    assert kbroker_env, "the image sets no KBROKER_* settings"
    for key in kbroker_env:
        assert key[len(ENV_PREFIX):].lower() in FIELDS, f"{key} is not a BrokerConfig setting"
    config = load_config([], environ=kbroker_env)
    assert (config.host, config.port, config.data_dir) == ("0.0.0.0", int(env["KBROKER_PORT"]), "/data")
    assert config.metrics_port == int(env["KBROKER_METRICS_PORT"])
    assert config.metrics_host == "0.0.0.0"


def test_every_copied_path_exists_and_is_not_dockerignored(dockerfile):
    sources = check_copies(dockerfile, ROOT)
    assert {"pyproject.toml", "protocol", "broker", "client"} <= {s.rstrip("/").split(" ")[0] for s in sources}
    patterns = dockerignore_patterns(ROOT)
    for src in sources:
        assert not ignored(src.rstrip("/"), patterns), f"{src} is COPYed but excluded by .dockerignore"
    # the packages pyproject installs are all copied
    for package in ("broker", "client", "kbroker_cli", "protocol", "spark_jobs"):
        assert package in sources
    # the heavy local directories never reach the build context
    for heavy in (".venv", ".git", "data"):
        assert ignored(heavy, patterns), f".dockerignore should exclude {heavy}"


# -- compose ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    data = load_yaml((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict) and isinstance(data.get("services"), dict)
    return data


def _build(service: dict) -> tuple[Path, Path] | None:
    build = service.get("build")
    if build is None:
        return None
    if isinstance(build, str):
        context, dockerfile = ROOT / build, "Dockerfile"
    else:
        context, dockerfile = ROOT / build.get("context", "."), build.get("dockerfile", "Dockerfile")
    return context, context / dockerfile


def _env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def test_compose_builds_and_mounts_exist(compose):
    services = compose["services"]
    declared_volumes = set(compose.get("volumes") or {})
    for name, service in services.items():
        built = _build(service)
        if built is not None:
            context, dockerfile = built
            assert context.is_dir(), f"{name}: build context {context} missing"
            assert dockerfile.is_file(), f"{name}: dockerfile {dockerfile} missing"
            check_copies(dockerfile_instructions(dockerfile), context)
        else:
            assert service.get("image"), f"{name}: neither build nor image"
        for volume in service.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (ROOT / source).exists(), f"{name}: mounted {source} does not exist"
            else:
                assert source in declared_volumes, f"{name}: named volume {source} is not declared"
        deps = service.get("depends_on") or []
        for dep in deps:
            assert dep in services, f"{name} depends on unknown service {dep}"
        if isinstance(deps, dict):
            for dep, cond in deps.items():
                assert cond["condition"] in ("service_started", "service_healthy", "service_completed_successfully")
                if cond["condition"] == "service_healthy":
                    target = _build(services[dep])
                    image_check = target is not None and any(
                        op == "HEALTHCHECK" for op, _ in dockerfile_instructions(target[1]))
                    assert image_check or services[dep].get("healthcheck"), \
                        f"{dep} has no healthcheck for {name} to wait on"
    # services sharing an image tag build it from the same recipe
    images: dict[str, tuple] = {}
    for name, service in services.items():
        if service.get("image") and _build(service):
            previous = images.setdefault(service["image"], _build(service))
            assert previous == _build(service), f"{name}: image {service['image']} built two ways"


@pytest.fixture(scope="module")
def compose_ports() -> dict:
    """docker-compose.override.yml: the published ports, which `docker compose` reads with docker-compose.yml."""
    data = load_yaml((ROOT / "docker-compose.override.yml").read_text())
    assert isinstance(data, dict) and set(data) == {"services"}
    return data["services"]


def test_compose_broker_env_and_ports(compose, compose_ports):
    broker = compose["services"]["broker"]
    env = _env(broker)
    for key in env:
        assert key.startswith(ENV_PREFIX), key
        assert key[len(ENV_PREFIX):].lower() in FIELDS, f"{key} is not a BrokerConfig setting"
    config = from_env(env)
    assert config.host == "0.0.0.0" and config.data_dir == "/data"
    published = {p.split(":")[-1] for p in compose_ports["broker"].get("ports", [])}
    assert {str(config.port), str(config.metrics_port)} <= published
    # the advertised listener names this container on the compose network
    adv_host, adv_port = config.advertised_host_port
    assert adv_host in (broker.get("hostname"), "broker") and adv_port == config.port
    mounted = {v.split(":")[1] for v in broker.get("volumes", [])}
    assert config.data_dir in mounted


def test_compose_prometheus_scrapes_the_broker(compose):
    prom = compose["services"]["prometheus"]
    mounts = {v.split(":")[1]: ROOT / v.split(":")[0] for v in prom["volumes"]}
    config_flag = next(c for c in prom["command"] if c.startswith("--config.file="))
    config_path = mounts[config_flag.split("=", 1)[1]]
    assert config_path == ROOT / "broker" / "deploy" / "prometheus.yml"
    scrape = load_yaml(config_path.read_text())
    targets = [t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    broker_env = from_env(_env(compose["services"]["broker"]))
    assert f"broker:{broker_env.metrics_port}" in targets
    promtool = shutil.which("promtool")
    if promtool:
        proc = subprocess.run([promtool, "check", "config", "--syntax-only", str(config_path)],
                              capture_output=True, text=True, timeout=60)
        if "unknown long flag" in proc.stderr:
            proc = subprocess.run([promtool, "check", "config", str(config_path)], capture_output=True, text=True,
                                  timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _module_parser(module: str):
    """The argparse parser of ``python -m <module>``: its ``build_parser()``, without importing Spark."""
    import importlib
    import importlib.util

    assert importlib.util.find_spec(module) is not None, f"module {module} does not exist"
    mod = importlib.import_module(module)
    assert hasattr(mod, "main"), f"{module} has no main()"
    source = Path(mod.__file__).read_text()
    assert re.search(r'^if __name__ == "__main__":', source, re.M), f"{module} cannot run with python -m"
    assert hasattr(mod, "build_parser"), f"{module} has no build_parser()"
    return mod.build_parser()


def test_compose_python_commands_exist_with_their_flags(compose):
    checked = 0
    for name, service in compose["services"].items():
        command = service.get("command")
        entry = service.get("entrypoint") or []
        argv = [*entry, *(command or [])] if isinstance(command, list | type(None)) else shlex.split(command)
        if argv[:2] == ["python", "-m"]:
            module, args = argv[2], argv[3:]
            parser = _module_parser(module)
            try:
                parser.parse_args(args)
            except SystemExit as exc:
                pytest.fail(f"{name}: `python -m {module} {' '.join(args)}` is rejected (exit {exc.code})")
            checked += 1
        elif argv[:1] == ["kbroker"]:
            from kbroker_cli.main import build_parser

            try:
                parsed = build_parser().parse_args(argv[1:])
            except Exception as exc:  # the CLI's parser raises UsageError instead of exiting
                pytest.fail(f"{name}: `{' '.join(argv)}` is rejected: {exc}")
            assert parsed.command is not None
            bootstrap = parsed.bootstrap_servers
            assert bootstrap == f"broker:{from_env(_env(compose['services']['broker'])).port}"
            checked += 1
    assert checked >= 2


def test_spark_image_runs_the_jobs(compose):
    service = compose["services"]["spark-export"]
    _, dockerfile = _build(service)
    target = service["build"]["target"]
    (instructions,) = [body for name, body in stages(dockerfile_instructions(dockerfile)) if name == target]
    froms = [args for op, args in instructions if op == "FROM"]
    assert froms and re.match(r"python:3\.1[1-9]", froms[-1])
    runs = " ".join(args for op, args in instructions if op == "RUN")
    assert re.search(r"openjdk-(1[7-9]|2\d)-jre", runs), "PySpark 4 needs Java 17+"
    assert '"kbroker[spark]"' in runs and "r.COMPILED" in runs
    cmd = [exec_form(args) for op, args in instructions if op == "CMD"]
    if cmd and cmd[-1] and cmd[-1][:2] == ["python", "-m"]:
        _module_parser(cmd[-1][2])


def test_parsers_used_here_understand_the_files():
    """Guard the tiny YAML reader against silently misreading: it refuses what it does not know."""
    assert load_yaml("a:\n  - x\n  - y: 1\n    z: [p, 'q', \"r\"]\nb:\n") == {"a": ["x", {"y": "1", "z": ["p", "q", "r"]}],
                                                                           "b": None}
    with pytest.raises(ValueError):
        load_yaml("a: &anchor 1\n")
    tree = ast.parse((ROOT / "broker" / "__main__.py").read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)


# -- the compose override files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose_host() -> dict:
    """docker-compose.host.yml: every service on the host's network (machines without bridge networks)."""
    data = load_yaml((ROOT / "docker-compose.host.yml").read_text())
    assert isinstance(data, dict) and set(data) == {"services"}
    return data["services"]


def test_compose_publishes_ports_only_in_the_override_file(compose, compose_ports):
    """Host networking cannot publish ports, so docker-compose.yml publishes none: `docker compose`
    adds docker-compose.override.yml's by itself, and -f ... -f docker-compose.host.yml leaves them out."""
    for name, service in compose["services"].items():
        assert "ports" not in service, f"{name}: publish ports in docker-compose.override.yml"
    for name, service in compose_ports.items():
        assert name in compose["services"], name
        assert set(service) == {"ports"}, f"{name}: docker-compose.override.yml only publishes ports"


def test_host_network_override_listens_on_127_0_0_1_and_addresses_it(compose, compose_host):
    services = compose["services"]
    assert set(compose_host) == set(services)
    for name, service in compose_host.items():
        assert service["network_mode"] == "host", name
        assert "ports" not in service, name
    # the brokers: 127.0.0.1 only, a port of their own each (one host), the port in KBROKER_PORT where the
    # image's HEALTHCHECK reads it
    brokers = {}
    for name, base in services.items():
        if base.get("image") != "kbroker:latest" or base.get("entrypoint"):
            continue
        env = {**_env(base), **_env(compose_host[name])}
        command = compose_host[name].get("command", base.get("command")) or []
        config = load_config(command, environ=env)
        assert (config.host, config.metrics_host) == ("127.0.0.1", "127.0.0.1"), name
        assert config.advertised_host_port == ("127.0.0.1", config.port), name
        assert env["KBROKER_PORT"] == str(config.port) and "--port" not in command, name
        assert config.cluster in (None, "etcd://127.0.0.1:2379"), name
        brokers[name] = config
    assert {"broker", "cluster-1", "cluster-2", "cluster-3"} <= set(brokers)
    ports = [p for c in brokers.values() for p in (c.port, c.metrics_port)]
    assert len(ports) == len(set(ports)), ports
    single = brokers["broker"]
    # the clients address the broker on 127.0.0.1
    topics = compose_host["topics"]["entrypoint"]
    assert topics[topics.index("--bootstrap-servers") + 1] == f"127.0.0.1:{single.port}"
    spark = compose_host["spark-export"]["command"]
    assert spark[spark.index("--bootstrap-servers") + 1] == f"127.0.0.1:{single.port}"
    # Prometheus: on 127.0.0.1, scraping the broker there (its config mounted where the base's is)
    prom = compose_host["prometheus"]
    assert "--web.listen-address=127.0.0.1:9090" in prom["command"]
    (mount,) = prom["volumes"]
    source, target = mount.split(":")[:2]
    assert any(v.split(":")[1] == target for v in services["prometheus"]["volumes"])
    scrape = load_yaml((ROOT / source).read_text())
    targets = [t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == [f"127.0.0.1:{single.metrics_port}"]
    # etcd: clients and peers on 127.0.0.1
    etcd = compose_host["etcd"]["command"]
    for flag in ("--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls"):
        assert etcd[etcd.index(flag) + 1].startswith("http://127.0.0.1:"), flag
