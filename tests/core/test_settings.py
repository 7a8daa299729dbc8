import argparse
import dataclasses

import pytest

from core.errors import SettingsError
from core.settings import DEFAULT_MODEL, Settings, add_settings_arguments, settings_from_args


def parse(argv, env):
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser)
    return settings_from_args(parser.parse_args(argv), env=env)


def test_defaults_without_cuda_pick_cpu_and_the_published_model():
    s = parse([], {})
    assert s.model == DEFAULT_MODEL
    assert s.device == "cpu"  # this machine has no CUDA
    assert s.dtype == "float32"
    assert s.max_duration_s == 1800.0


def test_flags_win_over_environment_which_wins_over_defaults():
    env = {"CODEC_MODEL": "/env/model", "CODEC_MAX_DURATION_S": "60"}
    s = parse(["--model", "/flag/model"], env)
    assert s.model == "/flag/model"
    assert s.max_duration_s == 60.0


@pytest.mark.parametrize("device", ["auto", "gpu", "cuda", "cuda:x"])
def test_device_auto_and_garbage_are_refused(device):
    with pytest.raises(SettingsError, match="cpu' or 'cuda:N"):
        parse(["--device", device], {})


def test_bfloat16_on_cpu_is_refused_with_advice():
    with pytest.raises(SettingsError, match="float32"):
        parse(["--device", "cpu", "--dtype", "bfloat16"], {})


def test_a_bf16_decode_runs_on_cpu_while_the_model_stays_fp32():
    s = parse(["--device", "cpu", "--decode-dtype", "bfloat16"], {"CODEC_COMPILE_DECODER": "yes"})
    assert (s.dtype, s.decode_dtype, s.compile_decoder) == ("float32", "bfloat16", True)
    assert parse([], {}).decode_dtype is None and parse([], {}).compile_decoder is False
    assert parse(["--no-compile-decoder"], {"CODEC_COMPILE_DECODER": "1"}).compile_decoder is False
    with pytest.raises(SettingsError, match="CODEC_DECODE_DTYPE"):
        parse([], {"CODEC_DECODE_DTYPE": "float16"})
    with pytest.raises(SettingsError, match="decode dtype 'float16'"):
        Settings(decode_dtype="float16")
    with pytest.raises(SettingsError, match="CODEC_COMPILE_DECODER"):
        parse([], {"CODEC_COMPILE_DECODER": "maybe"})


def test_bad_number_in_environment_names_the_variable():
    with pytest.raises(SettingsError, match="CODEC_MAX_DURATION_S"):
        parse([], {"CODEC_MAX_DURATION_S": "ten"})


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().device = "cuda:0"


@pytest.mark.parametrize(
    "field",
    [
        "max_duration_s",
        "max_file_mb",
        "encode_chunk_s",
        "encode_span_s",
        "batch_audio_s",
        "min_chunk_s",
        "encode_kv_device_mib",
    ],
)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(field, value):
    # nan used to pass (nan <= 0 is False) and turned limits off or crashed later in int(nan)
    with pytest.raises(SettingsError, match=field):
        Settings(**{field: value})


@pytest.mark.parametrize("value", [1, 3, 5, 8, -2])
def test_a_winograd_tile_that_does_not_exist_is_refused_with_the_ones_that_do(value):
    with pytest.raises(SettingsError, match="live_winograd must be one of 0, 2, 4, 6"):
        Settings(live_winograd=value)
    assert Settings(live_winograd=0).live_winograd == 0


def test_non_finite_number_in_environment_is_refused():
    with pytest.raises(SettingsError, match="max_file_mb"):
        parse([], {"CODEC_MAX_FILE_MB": "nan"})


# a valid value other than the default, per field type (str fields: their own)
_OTHER = {
    "model": "/some/model",
    "device": "cuda:1",
    "dtype": "bfloat16",
    "data_dir": "/some/data",
    "decode_dtype": "bfloat16",
    "live_packet_frames": 4,  # 1 // 2 would be 0, outside 1-8
    "live_winograd": 4,  # 6 // 2 would be 3: no such tile
    "anchors": "mp3,opus12",
}


def _other(spec, default):
    if spec.name in _OTHER:
        return _OTHER[spec.name]
    if spec.choices:
        return next(c for c in spec.choices if c != default)
    if spec.kind == "str":
        return "/some/folder"  # free text: a path
    if spec.kind == "bool":
        return not default
    return default // 2 if spec.kind == "int" else default / 2


def test_every_field_has_a_flag_and_a_variable_that_set_it():
    from core.options import specs

    defaults = Settings()
    for spec in specs(Settings):
        value = _other(spec, getattr(defaults, spec.name))
        text = str(value).lower() if isinstance(value, bool) else str(value)
        flag = (
            ([spec.flag] if value is True else [f"--no-{spec.flag[2:]}"])
            if isinstance(value, bool)
            else [spec.flag, text]
        )
        extra = ["--device", "cuda:0"] if spec.name == "dtype" else []  # bf16 needs a GPU device
        assert getattr(parse(flag + extra, {}), spec.name) == value, spec.flag
        env = {spec.env: text, **({"CODEC_DEVICE": "cuda:0"} if extra else {})}
        assert getattr(parse([], env), spec.name) == value, spec.env
    assert len(specs(Settings)) == len(Settings.__dataclass_fields__) >= 15


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(cleanup_threshold=1.5), "cleanup_threshold"),
        (dict(max_batch_memory_fraction=0.0), "max_batch_memory_fraction"),
        (dict(decode_chunk_frames=0), "decode_chunk_frames"),
        (dict(min_chunk_s=-1.0), "min_chunk_s"),
    ],
)
def test_values_are_checked_whichever_way_the_settings_are_made(changes, message):
    with pytest.raises(SettingsError, match=message):
        Settings(**changes)  # no validate() to forget: __post_init__ checks


def test_a_bad_boolean_in_the_environment_names_the_variable():
    with pytest.raises(SettingsError, match="CODEC_STRICT_FP32_ENCODE"):
        parse([], {"CODEC_STRICT_FP32_ENCODE": "maybe"})


def test_audio_limits_come_from_the_settings():
    limits = Settings(max_duration_s=60.0, max_file_mb=2.0).audio_limits()
    assert (limits.max_duration_s, limits.max_file_bytes) == (60.0, 2 << 20)


def test_data_dir_defaults_outside_the_repo_and_follows_env_then_flag(tmp_path):
    assert parse([], {"HOME": "/home/u"}).data_dir == "/home/u/.local/share/codec-workbench"
    assert parse([], {"XDG_DATA_HOME": "/xdg"}).data_dir == "/xdg/codec-workbench"
    assert parse([], {"CODEC_DATA_DIR": str(tmp_path)}).data_dir == str(tmp_path)
    assert parse(["--data-dir", "/flag"], {"CODEC_DATA_DIR": str(tmp_path)}).data_dir == "/flag"
