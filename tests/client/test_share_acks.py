"""The share consumer's bookkeeping without a broker: acknowledgements kept as coalesced offset ranges
(:class:`client.share_fetcher.AckRanges`, :class:`~client.share_fetcher.Acknowledgements`) and the records
of a ShareFetch answer taken an acquired range at a time, with their delivery counts
(``ShareFetcher._acquired``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from client.config import ConsumerConfig, build_config
from client.share_fetcher import GAP, Acknowledgements, AcknowledgeType, AckRanges, ShareFetcher
from client.types import Record, TopicPartition
from protocol.records import encode_batch

ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AcknowledgeType)


def runs(ranges: AckRanges) -> list[tuple[int, int, int]]:
    return [(first, last, int(t)) for first, last, t in ranges.runs]


def filled(*acks: tuple[int, int]) -> AckRanges:
    ranges = AckRanges()
    for offset, ack_type in acks:
        ranges.add(offset, ack_type)
    return ranges


def test_consecutive_offsets_of_one_type_make_one_run() -> None:
    ranges = filled(*((offset, ACCEPT) for offset in range(100, 600)))
    assert runs(ranges) == [(100, 599, ACCEPT)]
    assert ranges.batches() == [{"first_offset": 100, "last_offset": 599, "acknowledge_types": [ACCEPT]}]


def test_out_of_order_acknowledgements_coalesce_too() -> None:
    assert runs(filled(*((offset, ACCEPT) for offset in reversed(range(10))))) == [(0, 9, ACCEPT)]
    # a hole filled last joins the runs on both sides
    assert runs(filled((1, ACCEPT), (2, ACCEPT), (5, ACCEPT), (3, ACCEPT), (4, ACCEPT))) == [(1, 5, ACCEPT)]
    # before the first run, between runs, apart from any
    assert runs(filled((10, ACCEPT), (20, ACCEPT), (0, ACCEPT), (15, ACCEPT), (9, ACCEPT), (21, ACCEPT))) == [
        (0, 0, ACCEPT), (9, 10, ACCEPT), (15, 15, ACCEPT), (20, 21, ACCEPT)]


def test_mixed_types_make_runs_and_one_batch_with_a_type_per_offset() -> None:
    ranges = filled((0, ACCEPT), (1, ACCEPT), (2, RELEASE), (3, REJECT), (4, REJECT), (6, ACCEPT), (7, GAP))
    assert runs(ranges) == [(0, 1, ACCEPT), (2, 2, RELEASE), (3, 4, REJECT), (6, 6, ACCEPT), (7, 7, GAP)]
    assert ranges.batches() == [
        {"first_offset": 0, "last_offset": 4, "acknowledge_types": [ACCEPT, ACCEPT, RELEASE, REJECT, REJECT]},
        {"first_offset": 6, "last_offset": 7, "acknowledge_types": [ACCEPT, GAP]}]
    assert ranges.has(RELEASE) and not ranges.has(RENEW)


def test_acknowledging_again_replaces_the_type() -> None:
    ranges = filled(*((offset, RENEW) for offset in range(5)))
    ranges.add(2, ACCEPT)  # renewed, then accepted before the renewal was sent
    assert runs(ranges) == [(0, 1, RENEW), (2, 2, ACCEPT), (3, 4, RENEW)]
    ranges.add(2, ACCEPT)  # the same again: nothing changes
    assert runs(ranges) == [(0, 1, RENEW), (2, 2, ACCEPT), (3, 4, RENEW)]
    for offset in (0, 4, 1, 3):
        ranges.add(offset, ACCEPT)
    assert runs(ranges) == [(0, 4, ACCEPT)] and not ranges.has(RENEW)
    ranges.add(0, RELEASE)  # at a run's edges
    ranges.add(4, RELEASE)
    assert runs(ranges) == [(0, 0, RELEASE), (1, 3, ACCEPT), (4, 4, RELEASE)]


def test_add_range_extends_the_last_run_or_goes_offset_by_offset_over_others() -> None:
    ranges = AckRanges()
    ranges.add_range(0, 9, ACCEPT)
    ranges.add_range(10, 19, ACCEPT)
    ranges.add_range(25, 29, GAP)
    assert runs(ranges) == [(0, 19, ACCEPT), (25, 29, GAP)]
    ranges.add_range(18, 26, RELEASE)
    assert runs(ranges) == [(0, 17, ACCEPT), (18, 26, RELEASE), (27, 29, GAP)]


def test_partitions_are_kept_apart_and_taken_one_by_one() -> None:
    acks = Acknowledgements()
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    acks.add(TopicPartition("t", 0), 3, ACCEPT)  # an equal TopicPartition, not the same object
    for offset in range(3):  # interleaved, as records of two partitions are acknowledged
        acks.add(a, offset, ACCEPT)
        acks.add(b, 10 + offset, RELEASE)
    assert {tp: runs(r) for tp, r in acks.pending.items()} == {a: [(0, 3, ACCEPT)], b: [(10, 12, RELEASE)]}
    taken = acks.take([b])
    assert runs(taken[b]) == [(10, 12, RELEASE)] and list(acks.pending) == [a]
    acks.add(b, 13, RELEASE)  # after a take: pending again, not into what was taken
    assert runs(taken[b]) == [(10, 12, RELEASE)] and runs(acks.pending[b]) == [(13, 13, RELEASE)]
    assert not acks.has_renewals()
    acks.add(a, 9, RENEW)
    assert acks.has_renewals()
    acks.take([a, b])
    assert not acks and acks.take([a]) == {}


def _batches_of(offsets: dict[int, int]) -> list[dict[str, Any]]:
    """Kafka's AcknowledgementBatches of an offset -> type map, the plain way."""
    spans: list[list[int]] = []
    for offset in sorted(offsets):
        if spans and offset == spans[-1][-1] + 1:
            spans[-1].append(offset)
        else:
            spans.append([offset])
    out = []
    for span in spans:
        types = [offsets[o] for o in span]
        out.append({"first_offset": span[0], "last_offset": span[-1],
                    "acknowledge_types": types[:1] if len(set(types)) == 1 else types})
    return out


@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([GAP, ACCEPT, RELEASE, REJECT, RENEW])),
                max_size=120))
def test_ranges_hold_the_last_type_given_to_each_offset(acks: list[tuple[int, int]]) -> None:
    ranges = filled(*acks)
    expected = dict(acks)
    assert ranges.offsets() == expected
    assert ranges.batches() == _batches_of(expected)
    for (_, last, t), (first, _, u) in zip(ranges.runs, ranges.runs[1:], strict=False):
        assert last < first and (last + 1 < first or t != u)  # in order, disjoint, coalesced


# ---------------------------------------------------------------------------- acquired records


def fetcher(**config: Any) -> ShareFetcher:
    return ShareFetcher(None, build_config(ConsumerConfig, {"group_id": "g", **config}), "g", "m")  # type: ignore[arg-type]


def answer(batches: list[tuple[int, int]], acquired: list[tuple[int, int, int]], skip: tuple[int, ...] = ()) -> Any:
    """A ShareFetch partition answer: log batches ``(base offset, records)`` (offsets in ``skip`` left out of
    them) and the acquired ranges ``(first, last, delivery count)``."""
    data = b"".join(encode_batch([(None, f"v{base + i}".encode(), None, 1) for i in range(n) if base + i not in skip],
                                 base_offset=base, offset_deltas=[i for i in range(n) if base + i not in skip],
                                 last_offset_delta=n - 1)
                    for base, n in batches)
    return SimpleNamespace(records=memoryview(data), acquired_records=[
        SimpleNamespace(first_offset=f, last_offset=last, delivery_count=c) for f, last, c in acquired])


TP = TopicPartition("t", 3)


def test_the_acquired_records_come_with_their_range_s_delivery_count() -> None:
    f = fetcher()
    got = f._acquired(TP, answer([(0, 10), (10, 10)], [(12, 15, 2), (2, 9, 1), (16, 19, 1)]))
    assert all(type(r) is Record and (r.topic, r.partition) == ("t", 3) for r in got)
    assert [(r.offset, r.delivery_count, r.value) for r in got] == (
        [(o, 1, f"v{o}".encode()) for o in range(2, 10)] + [(o, 2, f"v{o}".encode()) for o in range(12, 16)]
        + [(o, 1, f"v{o}".encode()) for o in range(16, 20)])
    assert not f.gaps  # offsets 0, 1, 10, 11 came but were not acquired: not ours, no GAP either


def test_acquired_offsets_without_a_record_are_gaps() -> None:
    f = fetcher()
    got = f._acquired(TP, answer([(0, 10)], [(0, 12, 1)], skip=(3, 4, 7)))
    assert [r.offset for r in got] == [0, 1, 2, 5, 6, 8, 9]
    assert runs(f.gaps.pending[TP]) == [(3, 4, GAP), (7, 7, GAP), (10, 12, GAP)]
    f2 = fetcher()
    assert f2._acquired(TP, SimpleNamespace(records=None, acquired_records=[
        SimpleNamespace(first_offset=5, last_offset=6, delivery_count=1)])) == []
    assert runs(f2.gaps.pending[TP]) == [(5, 6, GAP)]
    assert fetcher()._acquired(TP, answer([(0, 10)], [])) == []


def test_overlapping_acquired_ranges_hand_out_each_record_once() -> None:
    f = fetcher()
    got = f._acquired(TP, answer([(0, 10)], [(0, 5, 1), (3, 8, 1), (4, 6, 1)]))
    assert [r.offset for r in got] == list(range(9)) and not f.gaps


def test_deserializers_apply_to_acquired_records() -> None:
    f = fetcher(value_deserializer=lambda v: v.decode().upper())
    got = f._acquired(TP, answer([(0, 4)], [(1, 2, 3)]))
    assert [(r.offset, r.value, r.delivery_count) for r in got] == [(1, "V1", 3), (2, "V2", 3)]
