import argparse

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
    with pytest.raises(SettingsError, match="decode dtype 'float16'"):
        parse(["--decode-dtype", "float16"], {})
    with pytest.raises(SettingsError, match="CODEC_COMPILE_DECODER"):
        parse([], {"CODEC_COMPILE_DECODER": "maybe"})


def test_bad_number_in_environment_names_the_variable():
    with pytest.raises(SettingsError, match="CODEC_MAX_DURATION_S"):
        parse([], {"CODEC_MAX_DURATION_S": "ten"})


def test_settings_are_frozen():
    with pytest.raises(Exception):
        Settings().device = "cuda:0"


@pytest.mark.parametrize("field", ["max_duration_s", "max_file_mb", "encode_chunk_s", "encode_span_s",
                                   "batch_audio_s", "min_chunk_s", "encode_kv_device_mib"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(field, value):
    # nan used to pass (nan <= 0 is False) and turned limits off or crashed later in int(nan)
    with pytest.raises(SettingsError, match=field):
        Settings(**{field: value}).validate()


def test_non_finite_number_in_environment_is_refused():
    with pytest.raises(SettingsError, match="max_file_mb"):
        parse([], {"CODEC_MAX_FILE_MB": "nan"})
