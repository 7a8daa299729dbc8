"""Inputs as people store them, without Ray or the model: Hub-layout Parquet with the audio inside,
WebDataset shards (good, damaged, truncated, non-UTF-8 names, brace patterns), folders of every readable
format, save_to_disk folders; each row's audio decodes exactly as the same bytes read from a file, and
every bad row is an error with its source and key."""

import json
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.audio.blocks import AudioLimits
from core.audio.files import load_audio
from core.audio.readers import AUDIO_SUFFIXES
from core.dataset.decode import decode_items
from core.dataset.fields import fields_columns, plan_fields, row_fields
from core.dataset.inputs import read_inputs
from core.errors import CodecError
from tests.core.dataset.builders import as_file, audio_bytes, hub_parquet, same_audio, tar_shard

LIMITS = AudioLimits()


def _decoded(inputs):
    return list(decode_items([i.path for i in inputs.items], [i.locator for i in inputs.items], LIMITS))


def test_hub_parquet_with_flac_mp3_wav_inside(tmp_path):
    files = {ext: audio_bytes(ext, 0.8 + i / 4, seed=i) for i, ext in enumerate(("flac", "mp3", "wav"))}
    rows = [{"audio": {"bytes": data, "path": f"clip.{ext}"}, "text": ext} for ext, data in files.items()]
    as_file(tmp_path, "beside.wav", files["wav"])
    rows += [
        {"audio": {"bytes": b"", "path": "empty.wav"}, "text": "empty bytes"},
        {"audio": {"bytes": None, "path": None}, "text": "neither"},
        {"audio": {"bytes": None, "path": "beside.wav"}, "text": "path only"},
        {"audio": {"bytes": b"not audio at all", "path": "bad.mp3"}, "text": "corrupt"},
    ]
    path = hub_parquet(tmp_path / "train-00000-of-00001.parquet", rows, row_group_size=2)
    inputs = read_inputs(path)
    assert inputs.kind == "parquet" and pq.ParquetFile(path).num_row_groups == 4
    assert [i.key for i in inputs.items] == [
        "clip.flac",
        "clip.mp3",
        "clip.wav",
        "empty.wav",
        "train-00000-of-00001.parquet#4",
        "beside.wav",
        "bad.mp3",
    ]
    assert [json.loads(i.extra)["text"] for i in inputs.items][:3] == ["flac", "mp3", "wav"]
    decoded = _decoded(inputs)
    for (audio, sha, reason), ext in zip(decoded[:3], files, strict=True):
        expected = load_audio(as_file(tmp_path / "files", f"clip.{ext}", files[ext]), LIMITS)
        assert reason == "" and same_audio(audio.samples, expected.samples), ext
        assert len(sha) == 64
    assert same_audio(decoded[5][0].samples, load_audio(tmp_path / "beside.wav").samples)
    reasons = [d[2] for d in decoded]
    assert "empty" in reasons[3] and "neither bytes nor a path" in reasons[4] and "bad.mp3" in reasons[6]


def test_a_binary_audio_column_and_binary_side_columns(tmp_path):
    wav = audio_bytes("wav", 0.5, seed=3)
    table = pa.table({"wav": pa.array([wav, None]), "speaker": ["s1", "s2"], "image": pa.array([b"\x89PNG", b""])})
    pq.write_table(table, tmp_path / "d.parquet")
    inputs = read_inputs(tmp_path / "d.parquet", audio_column="wav")
    assert [json.loads(i.extra) for i in inputs.items] == [{"speaker": "s1"}, {"speaker": "s2"}]
    assert "image" in inputs.left_out and "binary" in inputs.left_out["image"]  # not copied, and said so
    (first, _, ok), (_, _, reason) = _decoded(inputs)
    assert ok == "" and same_audio(first.samples, load_audio(as_file(tmp_path, "w.wav", wav)).samples)
    assert "empty" in reason


def test_a_struct_without_bytes_or_path_is_refused_with_advice(tmp_path):
    table = pa.table({"audio": [{"array": [0.0, 0.1], "sampling_rate": 16000}]})
    pq.write_table(table, tmp_path / "decoded.parquet")
    with pytest.raises(CodecError, match="neither 'bytes' nor 'path'"):
        read_inputs(tmp_path / "decoded.parquet")


def _sample(key: str, seed: int, **fields) -> list[tuple[str, bytes]]:
    return [(f"{key}.mp3", audio_bytes("mp3", 0.6, seed)), (f"{key}.json", json.dumps(fields).encode())]


def test_webdataset_shards_by_brace_pattern_with_every_kind_of_damage(tmp_path):
    latin1 = "caf\udce9"  # b"caf\xe9": a Latin-1 name, not UTF-8
    tar_shard(
        tmp_path / "data-000.tar",
        [
            *_sample("spk1/utt1", 1, text="hello", speaker="spk1"),
            *_sample(latin1, 2, text="non-UTF-8 name"),
            ("broken.mp3", b"\xff\xfb" + b"\x00" * 400),
            ("broken.json", b'{"text": "corrupt audio"}'),
            ("badjson.mp3", audio_bytes("mp3", 0.5, 3)),
            ("badjson.json", b"{not json"),
            ("noaudio.txt", b"only text"),
            ("withtext.flac", audio_bytes("flac", 0.5, 4)),
            ("withtext.txt", "文本".encode()),
        ],
    )
    second = tar_shard(tmp_path / "data-001.tar", _sample("a", 5, text="kept") + _sample("b", 6, text="cut"))
    with tarfile.open(second) as tar:
        cut = tar.getmember("b.json").offset_data + 5
    second.write_bytes(second.read_bytes()[:cut])  # a shard cut short inside b.json's data
    inputs = read_inputs(str(tmp_path / "data-{000..002}.tar"))
    assert inputs.kind == "webdataset"
    keys = [i.key for i in inputs.items]
    assert keys == ["spk1/utt1", "caf\\xe9", "broken", "withtext", "a"]
    fields = {i.key: json.loads(i.extra) for i in inputs.items}
    assert fields["spk1/utt1"]["json"] == {"text": "hello", "speaker": "spk1"}
    assert fields["spk1/utt1"]["__url__"] == "data-000.tar" and fields["withtext"]["txt"] == "文本"
    errors = {(e.source, e.key): e.reason for e in inputs.errors}
    assert "not valid JSON" in errors[("data-000.tar", "badjson")]
    assert "no audio member" in errors[("data-000.tar", "noaudio")]
    assert "truncated" in errors[("data-001.tar", "b")]
    assert "does not exist" in errors[("data-002.tar", "data-002.tar")]
    decoded = dict(zip(keys, _decoded(inputs), strict=True))
    expected = load_audio(as_file(tmp_path / "f", "utt1.mp3", _sample("x", 1)[0][1]))
    assert same_audio(decoded["spk1/utt1"][0].samples, expected.samples)
    assert decoded["caf\\xe9"][2] == "" and decoded["withtext"][2] == ""
    assert decoded["broken"][0] is None and "broken.mp3" in decoded["broken"][2]
    assert len({i.index for i in inputs.items} | {e.index for e in inputs.errors}) == inputs.count


def test_a_folder_of_shards_with_a_damaged_header_and_a_file_that_is_no_tar(tmp_path):
    (tmp_path / "shards").mkdir()
    damaged = tar_shard(tmp_path / "shards" / "a.tar", _sample("k", 1) + _sample("lost", 2))
    with tarfile.open(damaged) as tar:
        header = tar.getmember("lost.mp3").offset
    data = bytearray(damaged.read_bytes())
    data[header : header + 100] = b"garbage!" * 12 + b"...."  # a header whose checksum fails
    damaged.write_bytes(bytes(data))
    (tmp_path / "shards" / "b.tar").write_bytes(b"\x01" * 100)  # not a tar at all
    inputs = read_inputs(tmp_path / "shards")
    assert [i.key for i in inputs.items] == ["k"]
    errors = {(e.source, e.key): e.reason for e in inputs.errors}
    assert "lost" in errors[("a.tar", "a.tar: after k.json")]
    assert "not a readable tar" in errors[("b.tar", "b.tar")]


def test_a_folder_takes_every_readable_format_and_counts_the_rest(tmp_path):
    for i, ext in enumerate(("oga", "aif", "caf", "flac")):
        as_file(tmp_path / "sub", f"clip{i}.{ext}", audio_bytes(ext, 0.4, i))
    (tmp_path / "notes.txt").write_text("a transcript")
    (tmp_path / "sub" / "README").write_text("no extension")
    (tmp_path / "caf\udce9.wav").write_bytes(audio_bytes("wav", 0.3, 9))  # a non-UTF-8 name on disk
    inputs = read_inputs(tmp_path)
    assert [i.key for i in inputs.items] == [
        "caf\\xe9.wav",
        "sub/clip0.oga",
        "sub/clip1.aif",
        "sub/clip2.caf",
        "sub/clip3.flac",
    ]
    assert inputs.skipped == {"(none)": 1, ".txt": 1} and inputs.skipped_paths == ("notes.txt", "sub/README")
    assert all(reason == "" for _, _, reason in _decoded(inputs))  # each format is one the readers open


@pytest.mark.parametrize("ext", ["wav", "flac", "mp3", "oga", "aif", "caf"])
def test_the_shared_suffix_list_names_formats_the_readers_open(tmp_path, ext):
    assert f".{ext}" in AUDIO_SUFFIXES
    assert load_audio(as_file(tmp_path, f"x.{ext}", audio_bytes(ext, 0.3, 1))).samples.size > 0


def test_a_saved_dataset_folder_is_read_with_pyarrow_alone(tmp_path):
    datasets = pytest.importorskip("datasets")
    flac = audio_bytes("flac", 0.5, 7)
    ds = datasets.Dataset.from_dict({"audio": [{"bytes": flac, "path": "x.flac"}], "text": ["saved"]})
    ds.cast_column("audio", datasets.Audio(decode=False)).save_to_disk(str(tmp_path / "saved"))
    inputs = read_inputs(tmp_path / "saved")
    assert inputs.kind == "arrow" and [i.key for i in inputs.items] == ["x.flac"]
    assert json.loads(inputs.items[0].extra) == {"text": "saved"}
    audio, _, reason = _decoded(inputs)[0]
    assert reason == "" and same_audio(audio.samples, load_audio(as_file(tmp_path, "x.flac", flac)).samples)


def test_fields_get_one_schema_with_json_for_mixed_types_and_renames_for_our_names():
    extras = [json.dumps({"text": "a", "n": 1, "meta": {}, "frames": 3}), json.dumps({"text": "b", "n": "two"})]
    plan = plan_fields(extras)
    assert plan.names == ["text", "n", "meta", "input_frames"]
    assert set(plan.as_json) == {"n", "meta"} and plan.renamed == {"frames": "input_frames"}
    table = pa.table(fields_columns(extras, plan))
    meta = plan.metadata()
    assert row_fields(table, 0, meta) == {"text": "a", "n": 1, "meta": {}, "frames": 3}
    assert row_fields(table, 1, meta) == {"text": "b", "n": "two", "meta": None, "frames": None}
    assert np.asarray(table.column("input_frames").to_pylist()[:1]).tolist() == [3]
