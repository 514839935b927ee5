"""The transactional producer's state machine (no I/O): states, partitions, epoch bumps, error classes."""

from __future__ import annotations

import pytest

from client.errors import (
    AbortableTransactionError,
    CommitFailedError,
    FatalTransactionError,
    IllegalStateError,
    KafkaError,
    ProducerFencedError,
    RetriableTransactionError,
    TransactionAbortedError,
)
from client.transactions import Next, TransactionManager, TxnState, uses_transaction_v2
from client.types import TopicPartition
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode as E

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def ready(tv2: bool = False, pid: int = 7, epoch: int = 3) -> TransactionManager:
    m = TransactionManager("tx", 60000, tv2=tv2)
    m.begin_init()
    assert m.on_init_producer_id(E.NONE, pid, epoch) is Next.DONE
    assert m.state is TxnState.READY
    return m


def test_init_fenced_is_fatal_and_coordinator_errors_retry() -> None:
    m = TransactionManager("tx", 60000)
    m.begin_init()
    assert m.on_init_producer_id(E.NOT_COORDINATOR) is Next.FIND_COORDINATOR
    assert m.on_init_producer_id(E.CONCURRENT_TRANSACTIONS) is Next.RETRY
    assert m.on_init_producer_id(E.COORDINATOR_LOAD_IN_PROGRESS) is Next.RETRY
    assert m.on_init_producer_id(E.PRODUCER_FENCED) is Next.FAILED
    assert m.state is TxnState.FATAL_ERROR and isinstance(m.error, ProducerFencedError)
    with pytest.raises(ProducerFencedError):
        m.begin()


def test_sending_needs_a_transaction_and_version_1_adds_partitions_first() -> None:
    m = ready()
    with pytest.raises(IllegalStateError):
        m.check_send()
    m.begin()
    m.check_send()
    assert m.add_partition(T0) is True
    assert m.add_partition(T0) is False  # already waiting
    assert not m.sendable(T0)
    assert m.take_new_partitions() == [T0]
    assert m.add_partition(T1) is True  # comes while the first request is in flight
    assert m.on_add_partitions({T0: E.CONCURRENT_TRANSACTIONS}) is Next.RETRY
    assert m.on_add_partitions({T0: E.NOT_COORDINATOR}) is Next.FIND_COORDINATOR
    assert m.on_add_partitions({T0: E.NONE}) is Next.DONE
    assert m.sendable(T0) and not m.sendable(T1) and m.started
    assert m.take_new_partitions() == [T1]


def test_version_2_adds_partitions_with_the_produce() -> None:
    m = ready(tv2=True)
    m.begin()
    assert m.add_partition(T0) is False
    assert m.sendable(T0)
    assert not m.started
    m.on_batch_sent()
    assert m.started


def test_commit_of_an_empty_transaction_sends_no_end_txn() -> None:
    m = ready()
    m.begin()
    assert m.begin_commit() is False
    assert m.state is TxnState.READY
    m.begin()
    assert m.begin_abort() is False
    assert m.state is TxnState.READY


def test_commit_and_version_2_epoch_bump_from_end_txn() -> None:
    m = ready(tv2=True)
    gen = m.generation
    m.begin()
    m.on_batch_sent()
    assert m.begin_commit() is True
    assert m.end_request(True) == {"transactional_id": "tx", "producer_id": 7, "producer_epoch": 3, "committed": True}
    assert m.on_end_txn(E.CONCURRENT_TRANSACTIONS) is Next.RETRY
    assert m.on_end_txn(E.NONE, 7, 4) is Next.DONE
    assert (m.state, m.producer_epoch) == (TxnState.READY, 4)
    assert m.generation == gen + 1  # the producer restarts its sequence numbers


def test_a_failed_batch_makes_the_transaction_abortable_and_version_1_bumps_the_epoch_after_the_abort() -> None:
    m = ready()
    m.begin()
    m.add_partition(T0)
    m.take_new_partitions()
    m.on_add_partitions({T0: E.NONE})
    m.on_batch_failed(KafkaError(E.OUT_OF_ORDER_SEQUENCE_NUMBER))
    assert m.state is TxnState.ABORTABLE_ERROR
    first = m.error
    assert isinstance(first, AbortableTransactionError) and first.abortable and not first.fatal
    m.on_batch_failed(KafkaError(E.MESSAGE_TOO_LARGE))
    assert m.error is first  # the first error is kept
    with pytest.raises(AbortableTransactionError):
        m.check_send()
    with pytest.raises(AbortableTransactionError):
        m.begin_commit()
    assert m.begin_abort() is True
    assert m.on_end_txn(E.NONE) is Next.DONE
    assert m.needs_epoch_bump
    with pytest.raises(IllegalStateError, match="abort_transaction"):  # the bump must happen first
        m.begin()
    assert m.init_request() == {"transactional_id": "tx", "transaction_timeout_ms": 60000, "producer_id": 7,
                                "producer_epoch": 3}
    assert m.on_init_producer_id(E.NONE, 7, 4) is Next.DONE
    assert (m.state, m.producer_epoch, m.error) == (TxnState.READY, 4, None)
    m.begin()  # usable again


def test_fenced_batch_is_fatal() -> None:
    m = ready(tv2=True)
    m.begin()
    m.on_batch_failed(KafkaError(E.PRODUCER_FENCED))
    assert isinstance(m.error, ProducerFencedError) and m.error.fatal
    with pytest.raises(ProducerFencedError):
        m.begin_abort()


def test_add_partitions_errors_are_classified_as_kafka_does() -> None:
    for code, kind in [(E.TOPIC_AUTHORIZATION_FAILED, AbortableTransactionError),
                       (E.TRANSACTION_ABORTABLE, AbortableTransactionError),
                       (E.UNKNOWN_PRODUCER_ID, AbortableTransactionError),
                       (E.INVALID_PRODUCER_EPOCH, ProducerFencedError),
                       (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, FatalTransactionError),
                       (E.INVALID_TXN_STATE, FatalTransactionError)]:
        m = ready()
        m.begin()
        m.add_partition(T0)
        m.add_partition(T1)
        m.take_new_partitions()
        assert m.on_add_partitions({T0: code, T1: E.OPERATION_NOT_ATTEMPTED}) is Next.FAILED
        assert isinstance(m.error, kind), (code, m.error)
        assert m.error.code == (E.PRODUCER_FENCED if kind is ProducerFencedError else code)
    m = ready()
    m.begin()
    m.add_partition(T0)
    m.take_new_partitions()
    m.on_add_partitions({T0: E.UNKNOWN_PRODUCER_ID})
    assert m.epoch_bump_required


def test_txn_offset_commit_retries_the_rest_and_refuses_stale_members() -> None:
    m = ready()
    m.begin()
    step, done = m.on_txn_offset_commit({T0: E.NONE, T1: E.COORDINATOR_LOAD_IN_PROGRESS})
    assert (step, done) == (Next.RETRY, {T0})
    step, _ = m.on_txn_offset_commit({T1: E.NOT_COORDINATOR})
    assert step is Next.FIND_COORDINATOR
    step, _ = m.on_txn_offset_commit({T1: E.ILLEGAL_GENERATION})
    assert step is Next.FAILED
    assert isinstance(m.error, AbortableTransactionError)
    assert isinstance(m.error.__cause__, CommitFailedError)


def test_prepared_transaction_can_still_be_committed_or_aborted() -> None:
    m = ready(tv2=True)
    m.begin()
    m.on_batch_sent()
    m.check_ending()
    m.prepare()
    assert m.state is TxnState.PREPARED and not m.in_transaction
    with pytest.raises(IllegalStateError):
        m.check_send()
    assert m.begin_commit() is True
    assert m.on_end_txn(E.PRODUCER_FENCED) is Next.FAILED
    assert isinstance(m.error, ProducerFencedError)


def test_end_txn_unknown_producer_is_abortable_with_a_bump() -> None:
    m = ready()
    m.begin()
    m.on_batch_sent()
    m.begin_commit()
    assert m.on_end_txn(E.UNKNOWN_PRODUCER_ID) is Next.FAILED
    assert m.state is TxnState.ABORTABLE_ERROR and m.epoch_bump_required


def test_transaction_version_2_is_what_the_broker_offers() -> None:
    v2 = {ApiKey.END_TXN: (0, 5), ApiKey.PRODUCE: (3, 12), ApiKey.TXN_OFFSET_COMMIT: (0, 5)}
    v1 = {ApiKey.END_TXN: (0, 4), ApiKey.PRODUCE: (3, 11), ApiKey.TXN_OFFSET_COMMIT: (0, 4)}
    assert uses_transaction_v2(v2, {})
    assert not uses_transaction_v2(v1, {})
    assert not uses_transaction_v2(v2, {"transaction.version": 1})
    assert uses_transaction_v2(v2, {"transaction.version": 2})


def test_error_classes() -> None:
    assert RetriableTransactionError("x").retriable and not RetriableTransactionError("x").fatal
    assert TransactionAbortedError("x").txn_requires_abort
    assert ProducerFencedError("x").code == E.PRODUCER_FENCED and ProducerFencedError("x").fatal
