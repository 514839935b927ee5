"""A consume-transform-produce application on kbroker's client, run as its own process by
``test_client_transactions`` (so the test can kill -9 it).

``python ctp_app.py BOOTSTRAP IN OUT GROUP TXN_ID GROUP_PROTOCOL``: reads IN (read_committed) in group
GROUP, writes ``b"out-" + value`` to the same partition of OUT and the consumed offsets in one
transaction per batch, and exits 0 once the group's committed offsets reach the end of IN.  Any error
ends the session (consumer and producer closed, the uncommitted work is redone from the committed
offsets by a new session), as a robust application does.  Prints ``committed N`` after each commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

from client import Consumer, KafkaError, Producer, TopicPartition


async def session(bs: str, topic_in: str, topic_out: str, group: str, txn_id: str, protocol: str) -> bool:
    """One consumer and producer until the input is done (True) or an error ends it."""
    consumer = Consumer(topic_in, bootstrap_servers=bs, group_id=group, group_protocol=protocol,
                        isolation_level="read_committed", enable_auto_commit=False, auto_offset_reset="earliest",
                        session_timeout_ms=6000, heartbeat_interval_ms=500)
    producer = Producer(bootstrap_servers=bs, transactional_id=txn_id, transaction_timeout_ms=20000,
                        max_block_ms=20000)
    try:
        await consumer.start()
        await producer.start()
        idle = 0
        while True:
            batch = await consumer.getmany(timeout_ms=500, max_records=40)
            if not batch:
                idle += 1
                if idle % 4 == 0 and await done(consumer, topic_in):
                    return True
                continue
            idle = 0
            async with producer.transaction():
                for tp, records in batch.items():
                    for r in records:
                        await producer.enqueue(topic_out, b"out-" + (r.value or b""), partition=tp.partition)
                await producer.send_offsets_to_transaction(
                    {tp: records[-1].offset + 1 for tp, records in batch.items()}, consumer.group_metadata())
            print("committed", sum(len(r) for r in batch.values()), flush=True)
    finally:
        with contextlib.suppress(Exception):
            await producer.close(5)
        with contextlib.suppress(Exception):
            await consumer.close()


async def done(consumer: Consumer, topic: str) -> bool:
    parts = await consumer.partitions_for_topic(topic) or set()
    tps = [TopicPartition(topic, p) for p in parts]
    ends = await consumer.end_offsets(tps)
    committed = await consumer.committed_offsets(tps)
    return all((committed.get(tp) is not None and committed[tp].offset >= end)  # type: ignore[union-attr]
               for tp, end in ends.items())


async def main(argv: list[str]) -> None:
    bs, topic_in, topic_out, group, txn_id, protocol = argv
    while True:
        try:
            if await session(bs, topic_in, topic_out, group, txn_id, protocol):
                return
        except (TimeoutError, KafkaError, OSError) as exc:
            print("recovering from", repr(exc), flush=True)
        await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
