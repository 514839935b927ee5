"""IncrementalAlterConfigs operations (Kafka's prepareIncrementalConfigs) and broker loggers."""

from __future__ import annotations

import logging

import pytest

from broker.admin.configs import APPEND, DELETE, SET, SUBTRACT, ConfigChangeError, apply_ops
from broker.observability.loggers import LoggerConfigError, describe_loggers, set_logger_level

E_INVALID_CONFIG, E_INVALID_REQUEST = 40, 42


def effective(name: str) -> str | None:
    return {"cleanup.policy": "delete", "retention.ms": "604800000"}.get(name)


def test_set_delete_append_subtract() -> None:
    current = {"retention.ms": "1000", "segment.bytes": "5000"}
    out = apply_ops(current, [("retention.ms", DELETE, None), ("max.message.bytes", SET, "10"),
                              ("cleanup.policy", APPEND, "compact")], effective)
    assert out == {"segment.bytes": "5000", "max.message.bytes": "10", "cleanup.policy": "delete,compact"}
    assert current == {"retention.ms": "1000", "segment.bytes": "5000"}  # not modified in place
    # APPEND of a present item adds nothing; SUBTRACT removes from the override (else from the effective value)
    assert apply_ops({"cleanup.policy": "compact,delete"}, [("cleanup.policy", APPEND, "compact")],
                     effective) == {"cleanup.policy": "compact,delete"}
    assert apply_ops({}, [("cleanup.policy", SUBTRACT, "delete")], effective) == {"cleanup.policy": ""}
    assert apply_ops({"cleanup.policy": "compact,delete"}, [("cleanup.policy", SUBTRACT, "compact")],
                     effective) == {"cleanup.policy": "delete"}


@pytest.mark.parametrize("op,code", [(APPEND, E_INVALID_CONFIG), (SUBTRACT, E_INVALID_CONFIG),
                                     (7, E_INVALID_REQUEST)])
def test_list_operations_only_on_list_configs_and_unknown_operations(op: int, code: int) -> None:
    with pytest.raises(ConfigChangeError) as ei:
        apply_ops({}, [("retention.ms", op, "1")], effective)
    assert ei.value.code == code


def test_broker_loggers_levels_in_kafkas_names() -> None:
    logger = logging.getLogger("kbroker.log")
    before = logger.level
    try:
        set_logger_level("kbroker.log", "WARN")
        assert logger.level == logging.WARNING
        assert describe_loggers()["kbroker.log"] == ("WARN", True)
        set_logger_level("kbroker.log", "DEBUG", validate_only=True)
        assert logger.level == logging.WARNING
        set_logger_level("kbroker.log", None)
        assert logger.level == logging.NOTSET and describe_loggers()["kbroker.log"][1] is False
        with pytest.raises(LoggerConfigError, match="not a supported log level"):
            set_logger_level("kbroker.log", "LOUD")
        with pytest.raises(LoggerConfigError, match="does not exist"):
            set_logger_level("org.apache.kafka", "INFO")
        with pytest.raises(LoggerConfigError, match="root logger"):
            set_logger_level("root", None)
    finally:
        logger.setLevel(before)
