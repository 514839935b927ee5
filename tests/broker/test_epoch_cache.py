"""The leader-epoch cache: Kafka's end-offset rules, truncation, and the checkpoint file."""

from __future__ import annotations

from pathlib import Path

from broker.log.epoch_cache import CHECKPOINT_NAME, LeaderEpochCache


def cache_with(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(str(tmp_path))
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_end_offsets_follow_kafkas_rules(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (2, 10), (4, 30), (7, 55))
    leo = 80
    assert cache.end_offset_for(7, leo) == (7, 80)          # current epoch ends at the LEO
    assert cache.end_offset_for(4, leo) == (4, 55)
    assert cache.end_offset_for(5, leo) == (4, 55)          # unknown epoch: the largest below it
    assert cache.end_offset_for(1, leo) == (1, 10)          # below all: start of the first
    assert cache.end_offset_for(9, leo) == (-1, -1)         # above all
    assert cache.end_offset_for(-1, leo) == (-1, -1)
    assert cache.epoch_for_offset(29) == 2 and cache.epoch_for_offset(30) == 4 and cache.epoch_for_offset(5) == -1


def test_assign_ignores_older_epochs_and_drops_a_diverged_tail(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 20))
    assert not cache.assign(2, 25)
    assert not cache.assign(3, 40)
    assert cache.assign(5, 15)  # a new epoch starting before the last entry's start replaces it
    assert cache.entries == [(1, 0), (5, 15)]


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = cache_with(tmp_path, (1, 0), (3, 20), (6, 40))
    cache.truncate_from_end(40)
    assert cache.entries == [(1, 0), (3, 20)]
    cache.truncate_from_start(25)
    assert cache.entries == [(3, 25)]


def test_checkpoint_round_trip_and_corruption(tmp_path: Path) -> None:
    cache_with(tmp_path, (1, 0), (4, 12))
    assert (tmp_path / CHECKPOINT_NAME).read_text() == "0\n2\n1 0\n4 12\n"
    assert LeaderEpochCache(str(tmp_path)).entries == [(1, 0), (4, 12)]
    (tmp_path / CHECKPOINT_NAME).write_text("0\n3\n1 0\n")
    assert LeaderEpochCache(str(tmp_path)).entries == []


def test_an_unreadable_checkpoint_of_any_kind_leaves_an_empty_cache_that_says_so(tmp_path: Path) -> None:
    for garbage in (b"\x00\xff\xfe", b"0\n1\n-1 5\n", b"0\n1\n3\n", b"1\n0\n", b""):
        (tmp_path / CHECKPOINT_NAME).write_bytes(garbage)
        cache = LeaderEpochCache(str(tmp_path))
        assert cache.entries == [] and cache.unreadable, garbage
    cache.assign(2, 7)  # written anew: readable again
    assert not cache.unreadable and LeaderEpochCache(str(tmp_path)).entries == [(2, 7)]
    assert not LeaderEpochCache(str(tmp_path / "absent")).unreadable
