"""Issue 31, findings 7 to 10 and the tokenize items of 11, without Ray or the model: JSON of any
depth or size is one error row and the other rows go on; hard links in a tar are followed to the
earlier member (GNU tar writes one for a second name of a file), symlinks and other non-regular
members are lines with their reason; brace patterns are capped before anything is expanded; a shard
of 200,000 tiny members stays under a stated memory bound; names are printed escaped; duplicate
keys are warned."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import time

import pytest

from core.dataset.decode import decode_items
from core.dataset.inputs import read_inputs
from core.dataset.webdataset import MAX_PATTERN_NAMES, expand
from core.errors import CodecError
from core.settings import AudioLimits
from tests.core.dataset.builders import as_file, audio_bytes, tar_shard

DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_100000_deep_json_line_is_one_error_row_and_the_others_are_kept(tmp_path):
    as_file(tmp_path, "a.wav", audio_bytes("wav", 0.5, seed=1))
    manifest = tmp_path / "m.jsonl"
    lines = [json.dumps({"audio": "a.wav"}).encode(), b'{"audio": "a.wav", "x": ' + DEEP + b"}", b'{"audio": "a.wav"}']
    manifest.write_bytes(b"\n".join(lines) + b"\n")
    inputs = read_inputs(manifest)
    assert [i.index for i in inputs.items] == [0, 2]
    (error,) = inputs.errors
    assert error.index == 1 and "nested" in error.reason


def test_a_100000_deep_json_member_is_one_error_row_and_the_other_samples_are_kept(tmp_path):
    wav = audio_bytes("wav", 0.5, seed=1)
    shard = tar_shard(
        tmp_path / "s.tar",
        [("a.wav", wav), ("a.json", b'{"t": 1}'), ("b.wav", wav), ("b.json", DEEP), ("c.wav", wav)],
    )
    inputs = read_inputs(shard)
    assert [i.key for i in inputs.items] == ["a", "c"]
    (error,) = inputs.errors
    assert error.key == "b" and "nested" in error.reason
    big = tar_shard(tmp_path / "big.tar", [("d.wav", wav), ("d.json", b'"' + b"x" * (2 << 20) + b'"'), ("e.wav", wav)])
    (error,) = _errors_of(big)
    assert "MiB" in error.reason


def _errors_of(shard):
    try:
        return read_inputs(shard).errors
    except CodecError as e:  # no sample with audio left: the whole input is refused, naming the reason
        pytest.fail(str(e))


def _gnu_tar_with_a_hard_link(tmp_path):
    folder = tmp_path / "src"
    as_file(folder, "utt1.wav", audio_bytes("wav", 0.6, seed=4))
    os.link(folder / "utt1.wav", folder / "utt2.wav")
    (folder / "utt3.wav").symlink_to("utt1.wav")
    os.mkfifo(folder / "utt4.wav")
    shard = tmp_path / "linked.tar"
    subprocess.run(
        ["tar", "--format=gnu", "-cf", shard, "-C", folder, "utt1.wav", "utt2.wav", "utt3.wav", "utt4.wav"], check=True
    )
    return shard


def test_a_gnu_tar_hard_link_encodes_both_names_and_symlinks_are_refused_with_a_reason(tmp_path):
    shard = _gnu_tar_with_a_hard_link(tmp_path)
    with tarfile.open(shard) as tar:
        assert tar.getmember("utt2.wav").islnk()  # what GNU tar writes for the second name
    inputs = read_inputs(shard)
    assert [i.key for i in inputs.items] == ["utt1", "utt2"]
    decoded = list(decode_items([i.path for i in inputs.items], [i.locator for i in inputs.items], AudioLimits()))
    assert all(a is not None for a, _, _ in decoded) and decoded[0][1] == decoded[1][1]  # the same bytes
    reasons = {e.key: e.reason for e in inputs.errors}
    assert "symbolic link" in reasons["utt3"] and "utt1.wav" in reasons["utt3"]
    assert "FIFO" in reasons["utt4"]


def test_a_hard_link_to_a_member_not_before_it_is_a_line(tmp_path):
    shard = tmp_path / "s.tar"
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as tar:
        link = tarfile.TarInfo("a.wav")
        link.type, link.linkname = tarfile.LNKTYPE, "../../etc/passwd"
        tar.addfile(link)
        data = audio_bytes("wav", 0.5, seed=1)
        info = tarfile.TarInfo("b.wav")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    inputs = read_inputs(shard)
    assert [i.key for i in inputs.items] == ["b"]
    assert "hard link" in inputs.errors[0].reason and "earlier member" in inputs.errors[0].reason


def test_a_brace_pattern_of_10_to_the_8_names_fails_at_once():
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CodecError, match=f"{MAX_PATTERN_NAMES:,}"):
        expand("/nowhere/{0..9999}{0..9999}.tar")
    assert time.perf_counter() - started < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB
    with pytest.raises(CodecError, match="names"):
        read_inputs("/nowhere/{a,b}{0..99999}.tar")
    assert len(expand("/nowhere/{a,b}-{000..009}.tar")) == 20


def test_names_with_terminal_escapes_are_printed_escaped(tmp_path):
    wav = audio_bytes("wav", 0.5, seed=1)
    shard = tar_shard(tmp_path / "s.tar", [("evil\x1b[2J\x07.wav", wav), ("ok.wav", wav)])
    keys = [i.key for i in read_inputs(shard).items]
    assert keys[0] == "evil\\x1b[2J\\x07" and all(c.isprintable() for k in keys for c in k)


def test_non_consecutive_duplicate_keys_are_warned(tmp_path, caplog):
    wav = audio_bytes("wav", 0.5, seed=1)
    shard = tar_shard(tmp_path / "s.tar", [("a.wav", wav), ("b.wav", wav), ("a.json", b"{}")])
    inputs = read_inputs(shard)
    assert [i.key for i in inputs.items] == ["a", "b"] and [e.key for e in inputs.errors] == ["a"]  # a.json alone
    (note,) = [v for k, v in inputs.left_out.items() if k.startswith("duplicate keys")]
    assert "first: a" in note and any("come back later" in r.message for r in caplog.records)


MANY = """
import json, sys, psutil
from core.dataset.inputs import read_inputs
import core.dataset.webdataset, pyarrow  # what reading needs, loaded before the measurement
before = psutil.Process().memory_info().rss
inputs = read_inputs(sys.argv[1])
after = psutil.Process().memory_info().rss  # with every row still held
print(json.dumps({"grew_kib": (after - before) // 1024, "errors": len(inputs.errors), "items": len(inputs.items),
                  "last": [e.reason for e in inputs.errors[-2:]]}))
"""


@pytest.mark.slow
def test_200000_tiny_members_stay_under_the_stated_memory_bound(tmp_path):
    """200,000 one-byte members took 1.2 GB in a whole run before (the index alone: 173 MiB, with
    tarfile's list of every member and 200,000 error rows). The per-shard caps (100,000 members, 1,000
    error lines) bound it: stated bound 50 MiB for the index of such a shard (measured: 3.5 MiB)."""
    shard = tmp_path / "many.tar"
    wav = audio_bytes("wav", 0.5, seed=1)
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("first.wav")
        info.size = len(wav)
        tar.addfile(info, io.BytesIO(wav))
        one = tarfile.TarInfo()
        one.size = 1
        for n in range(200_000):
            one.name = f"m{n:06d}.txt"
            tar.addfile(one, io.BytesIO(b"x"))
    out = subprocess.run([sys.executable, "-c", MANY, str(shard)], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["grew_kib"] < 50 * 1024, result
    cap, rest = result["last"]
    assert result["items"] == 1 and "not read" in cap and "not listed" in rest, result  # both caps' lines
    assert result["errors"] == 1_000 + 2, result  # the error cap: 1,000 lines, one counting the rest, the member cap
