"""The verdict cache's format on its ref: records, batch names, batch trees, compaction."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from support import outcome_for

from gitreduce.core import fileset
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.cache_format import (
    BATCHES,
    CANDIDATES,
    VERDICTS,
    RecordCodec,
    child_tree,
    compact_batches,
    keep_better,
    new_batch_name,
    parse_records,
    record_blobs,
    records_blob,
    write_batch,
    write_candidate,
)


@pytest.fixture
def bare(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "store.git"), bare=True)


def keep(oid: pygit2.Oid, size: int, *, unique: bool) -> pygit2.Oid:
    return oid


KEY = "ab" * 20
CODEC = RecordCodec("f" * 40, b"s" * 32, "ada@host", "0123456789ab")


def test_records_are_compact_json_arrays_that_read_back_as_local():
    record = CODEC.encode(KEY, Outcome(Verdict.BAD, 1, 0.15349, "error: x", solo_runs=3))
    assert re.fullmatch(
        rb'\[2,"bad",1,0\.153,"error: x",3,"ada@host","0123456789ab","[0-9a-f]{32}"\]', record
    )
    assert CODEC.encode(KEY, Outcome(Verdict.TIMEOUT, None, 10.0)).startswith(
        b'[2,"timeout",null,10.0,null,0,'
    )
    for index in range(5):
        decoded = CODEC.decode(KEY, CODEC.encode(KEY, outcome_for(index)))
        assert decoded == outcome_for(index) and decoded is not None and decoded.local
    decoded = CODEC.decode(KEY, record)
    assert decoded is not None and decoded.solo_runs == 3


def test_a_record_is_local_only_where_its_mac_verifies():
    record = CODEC.encode(KEY, outcome_for(0))
    elsewhere = replace(CODEC, secret=b"o" * 32)
    other_test = replace(CODEC, fingerprint="e" * 40)
    for codec, key, raw in [
        (elsewhere, KEY, record),  # written by another repository
        (other_test, KEY, record),  # copied from another test's cache
        (CODEC, "cd" * 20, record),  # copied to another candidate
        (CODEC, KEY, record.replace(b'"good",0', b'"bad",1')),  # edited
        (CODEC, KEY, record[:-4] + b'00"]'),  # a forged mac
    ]:
        decoded = codec.decode(key, raw)
        assert decoded is not None and not decoded.local, raw
    assert CODEC.decode(KEY, record.replace(b'"good",0', b'"bad",1')) == Outcome(
        Verdict.BAD, 1, 0.25
    )


def test_records_of_the_first_version_read_back_as_foreign():
    decoded = CODEC.decode(KEY, b'["bad",1,0.153,"error: x"]')
    assert decoded == Outcome(Verdict.BAD, 1, 0.153, "error: x") and not decoded.local
    assert CODEC.decode(KEY, b'["timeout",null,10.0]') == Outcome(Verdict.TIMEOUT, None, 10.0)


def test_a_revoked_runs_records_are_ignored():
    record = CODEC.encode(KEY, outcome_for(1))
    assert CODEC.decode(KEY, record) is not None
    assert replace(CODEC, revoked=frozenset({CODEC.run})).decode(KEY, record) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'["maybe",0,1.0]',
        b'{"verdict":"bad"}',
        b'[3,"bad",1,0.1,null,0,"a","0123456789ab","00"]',
        b'[2,"bad",1,0.1,null,0,"a","0123456789ab"]',
        b'[2,"bad","1",0.1,null,0,"a","0123456789ab","00"]',
        b'[2,"bad",1,0.1,null,-1,"a","0123456789ab","00"]',
        b'[true,"bad",1,0.1,null,0,"a","0123456789ab","00"]',
    ],
)
def test_a_record_this_version_cannot_read_is_none(raw):
    assert CODEC.decode(KEY, raw) is None


def test_a_better_founded_record_replaces_one_read_before():
    key = KEY.encode()
    local = CODEC.encode(KEY, outcome_for(0))
    verified = CODEC.encode(KEY, replace(outcome_for(0), solo_runs=3))
    foreign = b'["bad",1,0.2]'
    lines: dict[bytes, bytes] = {}
    for record in (foreign, local, b'["skip",125,0.0]', verified, local):
        keep_better(lines, key, record, CODEC.rank)
    assert lines[key] == verified
    lines = {key: foreign}
    keep_better(lines, key, b'["skip",125,0.0]', CODEC.rank)
    assert lines[key] == foreign  # of equals the first wins: later ones are re-runs


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


def test_compaction_folds_batches_into_shards_and_the_best_founded_record_wins(bare):
    keys = [f"{digit}{digit}" + "0" * 38 for digit in "abc"]
    local = CODEC.encode(keys[2], outcome_for(0))
    set_tree = write_candidate(bare, fileset.pack({"a.h": b"int a;\n", "sub/b.c": b"b"}))[-1][0]
    older = write_batch(
        bare,
        keep,
        {keys[0].encode(): b'["bad",1,0.2]', keys[2].encode(): b'["bad",1,0.2]'},
        {},
        b"",
    )
    newer = write_batch(
        bare,
        keep,
        {
            keys[0].encode(): b'["good",0,0.1]',
            keys[1].encode(): b'["skip",125,0.0]',
            keys[2].encode(): local,
        },
        {
            keys[1][:16]: (bare.create_blob(b"candidate"), pygit2.enums.FileMode.BLOB),
            keys[0][:16]: (set_tree, pygit2.enums.FileMode.TREE),
        },
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
    compact_batches(bare, keep, tree, folded, listed, CODEC.rank)
    compacted = bare[folded.write()]
    assert isinstance(compacted, pygit2.Tree)
    shards = child_tree(compacted, VERDICTS)
    assert shards is not None and sorted(entry.name for entry in shards) == ["aa", "bb", "cc"]
    assert parse_records(shards["aa"].data) == {keys[0].encode(): b'["bad",1,0.2]'}
    assert parse_records(shards["cc"].data) == {keys[2].encode(): local}
    candidates = child_tree(compacted, CANDIDATES)
    assert candidates is not None and keys[1][2:16] in candidates["bb"]
    kept_set = candidates["aa"][keys[0][2:16]]  # a file set's candidate stays a tree
    assert kept_set.id == set_tree and kept_set.filemode == pygit2.enums.FileMode.TREE
