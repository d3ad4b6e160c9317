"""The verdict cache's format on its ref: records, batch names, batch trees, compaction."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest
from support import outcome_for

from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.cache_format import (
    BATCHES,
    CANDIDATES,
    VERDICTS,
    child_tree,
    compact_batches,
    decode_record,
    encode_record,
    new_batch_name,
    parse_records,
    record_blobs,
    records_blob,
    write_batch,
)


@pytest.fixture
def bare(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "store.git"), bare=True)


def keep(oid: pygit2.Oid, size: int, *, unique: bool) -> pygit2.Oid:
    return oid


def test_records_are_compact_json_arrays_that_read_back():
    assert encode_record(Outcome(Verdict.BAD, 1, 0.15349, "error: x")) == (
        b'["bad",1,0.153,"error: x"]'
    )
    assert encode_record(Outcome(Verdict.TIMEOUT, None, 10.0)) == b'["timeout",null,10.0]'
    for index in range(5):
        assert decode_record(encode_record(outcome_for(index))) == outcome_for(index)


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'["maybe",0,1.0]', b'{"verdict":"bad"}'])
def test_a_record_this_version_cannot_read_is_none(raw):
    assert decode_record(raw) is None


def test_records_blobs_sort_by_key_and_parse_back_without_a_checkpoint_head():
    lines = {b"b" * 40: b'["good",0,0.1]', b"a" * 40: b'["bad",1,0.2]'}
    data = records_blob(lines)
    assert data.splitlines()[0].startswith(b"a" * 40)
    assert parse_records(b"# checkpoint 0-1\n" + data + b"short line\n") == lines
    first_wins = data + b"a" * 40 + b' ["skip",125,0.0]\n'
    assert parse_records(first_wins)[b"a" * 40] == b'["bad",1,0.2]'


def test_batch_names_start_with_the_time_and_end_random():
    first, second = new_batch_name(), new_batch_name()
    assert re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]{8}", first)
    assert first != second and first[:12] <= second[:12]


def test_compaction_folds_batches_into_shards_and_the_first_record_wins(bare):
    keys = [f"{digit}{digit}" + "0" * 38 for digit in "ab"]
    older = write_batch(bare, keep, {keys[0].encode(): b'["bad",1,0.2]'}, {}, b"")
    newer = write_batch(
        bare,
        keep,
        {keys[0].encode(): b'["good",0,0.1]', keys[1].encode(): b'["skip",125,0.0]'},
        {keys[1][:16]: bare.create_blob(b"candidate")},
        b"# checkpoint 2-b\n",
    )
    batches = bare.TreeBuilder()
    batches.insert("1-a", older, pygit2.enums.FileMode.TREE)
    batches.insert("2-b", newer, pygit2.enums.FileMode.TREE)
    root = bare.TreeBuilder()
    root.insert(BATCHES, batches.write(), pygit2.enums.FileMode.TREE)
    tree = bare[root.write()]
    assert isinstance(tree, pygit2.Tree)
    assert record_blobs(tree) == [bare[older][VERDICTS].id, bare[newer][VERDICTS].id]

    folded = bare.TreeBuilder(tree)
    listed = sorted((entry.name or "", entry) for entry in child_tree(tree, BATCHES) or [])
    compact_batches(bare, keep, tree, folded, listed)
    compacted = bare[folded.write()]
    assert isinstance(compacted, pygit2.Tree)
    shards = child_tree(compacted, VERDICTS)
    assert shards is not None and sorted(entry.name for entry in shards) == ["aa", "bb"]
    assert parse_records(shards["aa"].data) == {keys[0].encode(): b'["bad",1,0.2]'}
    candidates = child_tree(compacted, CANDIDATES)
    assert candidates is not None and keys[1][2:16] in candidates["bb"]
