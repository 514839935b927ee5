"""Broker settings: unknown keys are refused from every source, values must parse, the set of known
keys is the dataclass's fields (so settings added later are known at once), every setting is declared
completely, and the configuration package imports nothing of the broker above it."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import docs
from broker.config.declare import Dynamic, Group
from broker.config.loader import ConfigError, from_env, from_mapping, from_toml
from broker.config.settings import (
    DYNAMIC_ONLY,
    FIELD_SETTINGS,
    NON_SETTING_ENV,
    SETTINGS,
    TOPIC_SYNONYMS,
    BrokerConfig,
    known_settings,
)
from broker.core import check_config, group_settings
from broker.core import load_config as load
from broker.log.config import TOPIC_CONFIGS

REPO = Path(__file__).resolve().parents[2]


def test_unknown_set_key_is_refused_with_the_closest_known_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting 'log\.retention\.hour' \(--set\); "
                                          r"did you mean 'log\.retention\.ms'\?"):
        from_mapping({"log.retention.hour": "1"}, source="--set")


def test_suggestion_follows_the_spelling_used() -> None:
    with pytest.raises(ConfigError, match="did you mean 'log-retention-ms'"):
        from_mapping({"log-retention-mss": "1"})
    with pytest.raises(ConfigError, match="did you mean 'log_retention_ms'"):
        from_mapping({"log_retention_mss": "1"})
    with pytest.raises(ConfigError, match=r"unknown setting 'zzz' \(setting\)$"):
        from_mapping({"zzz": "1"})   # nothing close: no suggestion


def test_unknown_environment_setting_is_refused_but_other_kbroker_variables_are_not() -> None:
    with pytest.raises(ConfigError, match="'KBROKER_LOG_RETENTION_HOUR' \\(environment\\); "
                                          "did you mean 'KBROKER_LOG_RETENTION_MS'"):
        from_env({"KBROKER_LOG_RETENTION_HOUR": "1"})
    # variables the code reads for other purposes are not settings
    env = {name: "x" for name in NON_SETTING_ENV} | {"KBROKER_PORT": "9999", "PATH": "/bin", "KAFKA_FOO": "1"}
    assert {"KBROKER_CONFIG", "KBROKER_LOG_FORMAT", "KBROKER_BOOTSTRAP"} <= NON_SETTING_ENV
    assert from_env(env).port == 9999


def test_unknown_toml_key_is_refused_with_its_dotted_path(tmp_path: Path) -> None:
    path = tmp_path / "k.toml"
    path.write_text('[log]\nretention.hour = 1\n')
    with pytest.raises(ConfigError, match=r"unknown setting 'log\.retention\.hour' \(in .*k\.toml\); "
                                          r"did you mean 'log\.retention\.ms'"):
        from_toml(path)
    path.write_text('port = 9095\n[log]\nretention_ms = 5\n[broker]\nnode_id = 3\n')
    config = from_toml(path)
    assert (config.port, config.log_retention_ms, config.node_id) == (9095, 5, 3)
    path.write_text('port = [')
    with pytest.raises(ConfigError, match="not valid TOML"):
        from_toml(path)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("port", "abc", "'abc' is not an integer"),
    ("port", True, "True is not an integer"),
    ("num.partitions", 1.5, "1.5 is not an integer"),
    ("auto.create.topics.enable", "maybe", "not a boolean"),
    ("port", None, "cannot be empty"),
])
def test_values_must_parse(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_mapping({key: value})


def test_values_of_every_type_parse() -> None:
    config = from_mapping({"auto.create.topics.enable": "off", "port": " 9093 ", "log.flush.interval.ms": "none",
                           "broker.rack": "r1", "delete.topic.enable": True, "num.partitions": 3.0})
    assert config.auto_create_topics_enable is False and config.port == 9093
    assert config.log_flush_interval_ms is None and config.broker_rack == "r1"
    assert config.delete_topic_enable is True and config.num_partitions == 3


def test_every_field_is_a_known_setting() -> None:
    """The known keys are the dataclass's fields: each one is accepted in every spelling."""
    fields = [f for f in dataclasses.fields(BrokerConfig)]
    assert sorted(f.name.replace("_", ".") for f in fields) == known_settings()
    defaults = BrokerConfig()
    for f in fields:
        value = getattr(defaults, f.name)
        raw = "none" if value is None else str(value)
        for key in (f.name, f.name.replace("_", "."), f.name.replace("_", "-")):
            assert getattr(from_mapping({key: raw}), f.name) == value, key
        assert getattr(from_env({"KBROKER_" + f.name.upper(): raw}), f.name) == value
    assert not any(f.name == "extra" for f in fields)   # nothing swallows unknown keys any more


def test_load_refuses_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        load(["--set", "log.retention.hour=1"], environ={})
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == ("python -m broker: error: unknown setting 'log.retention.hour' (--set); "
                   "did you mean 'log.retention.ms'?\n")
    with pytest.raises(SystemExit) as info:
        load([], environ={"KBROKER_PROT": "1"})
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        load(["--set", "log.message.timestamp.type=Sometimes"], environ={})
    assert info.value.code == 2 and "message.timestamp.type" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        load(["--config", "/nonexistent/kbroker.toml"], environ={})
    assert info.value.code == 2


def test_load_reads_every_source_in_order(tmp_path: Path) -> None:
    path = tmp_path / "k.toml"
    path.write_text('port = 1\nnum_partitions = 2\nlog.retention.ms = 3\n')
    config = load(["--port", "4", "--set", "num.partitions=5"],
                  environ={"KBROKER_CONFIG": str(path), "KBROKER_PORT": "6", "KBROKER_LOG_FORMAT": "json",
                           "KBROKER_LOG_RETENTION_MS": "7"})
    assert (config.port, config.num_partitions, config.log_retention_ms) == (4, 5, 7)


def test_python_m_broker_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "KBROKER_LOG_RETENTION_HOUR": "1"}
    proc = subprocess.run([sys.executable, "-m", "broker", "--data-dir", str(tmp_path / "d")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        "python -m broker: error: unknown setting 'KBROKER_LOG_RETENTION_HOUR' (environment); "
        "did you mean 'KBROKER_LOG_RETENTION_MS'?"]
    assert not (tmp_path / "d").exists()   # refused before touching the data directory


@pytest.mark.parametrize(("settings", "message"), [
    ({"group.consumer.heartbeat.interval.ms": "1000"}, r"heartbeat\.interval\.ms \(1000\) must be between"),
    ({"group.consumer.session.timeout.ms": "90000"}, r"session\.timeout\.ms \(90000\) must be between"),
    ({"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "5000"},
     "must be less than group.consumer.session.timeout.ms"),
    ({"group.consumer.assignors": "uniform,sticky"}, "unknown assignor"),
    ({"group.consumer.assignors": " , "}, "at least one assignor"),
    ({"group.consumer.max.size": "0"}, "group.consumer.max.size must be at least 1"),
])
def test_consumer_group_settings_are_checked_like_kafka(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_config(from_mapping(settings))


def test_consumer_group_settings_reach_the_coordinator() -> None:
    config = from_mapping({"group.consumer.assignors": "range, uniform", "group.consumer.heartbeat.interval.ms": "6000"})
    check_config(config)
    assert group_settings(config).consumer.assignors == ("range", "uniform")
    assert config.group_consumer_heartbeat_interval_ms == 6000 and config.group_consumer_session_timeout_ms == 45_000


def test_every_setting_is_declared_completely() -> None:
    for s in SETTINGS.values():
        assert s.doc.endswith(".") and len(s.doc) > 15, s.name
        assert s.plain_doc and "`" not in s.plain_doc
        if s.attr is not None:
            assert s.default == getattr(BrokerConfig(), s.attr), s.name
    # a broker-level default of a topic config has that config's type (what DescribeConfigs reports for both)
    for topic, synonyms in TOPIC_SYNONYMS.items():
        assert topic in TOPIC_CONFIGS
        for name, _ in synonyms:
            assert SETTINGS[name].type == TOPIC_CONFIGS[topic].type, name
        # and the same default (declared in both places: a change to one must be made to the other)
        setting = SETTINGS[synonyms[0][0]]
        if setting.default is not None:
            default = str(setting.default).lower() if isinstance(setting.default, bool) else str(setting.default)
            assert default == TOPIC_CONFIGS[topic].default, topic
    # dynamic-only configs are no static settings: refused in --set like any unknown key
    for s in DYNAMIC_ONLY:
        assert s.dynamic is Dynamic.STORED and s.attr is None
        with pytest.raises(ConfigError, match="unknown setting"):
            from_mapping({s.name: "1"})
    assert [s.name for s in FIELD_SETTINGS if s.sensitive] == ["ssl.keyfile.password", "inter.broker.sasl.password"]


def test_the_configuration_package_imports_only_the_standard_library_and_protocol() -> None:
    """broker.config sits at the bottom of the broker: nothing of the broker above it (see its docstring)."""
    allowed = set(sys.stdlib_module_names) | {"protocol", "broker"}
    for path in sorted((REPO / "broker" / "config").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                assert name.split(".")[0] in allowed, (path.name, name)
                if name.startswith("broker"):
                    assert name == "broker.config" or name.startswith("broker.config."), (path.name, name)


def test_the_readme_settings_tables_are_written_from_the_declarations() -> None:
    """README.md's settings tables are what ``python -m broker.config.docs`` writes (run it after changing a
    declaration); every group of settings has exactly one table."""
    text = (REPO / "README.md").read_text()
    assert docs.update(text) == text, "README.md's settings tables are stale: run python -m broker.config.docs"
    shown = [group for region in docs.regions(text) for group in region]
    assert sorted(shown, key=lambda g: g.name) == sorted(Group, key=lambda g: g.name)
    assert docs.main(["--check"]) == 0
