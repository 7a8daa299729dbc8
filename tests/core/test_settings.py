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


def test_data_dir_defaults_outside_the_repo_and_follows_env_then_flag(tmp_path):
    assert parse([], {"HOME": "/home/u"}).data_dir == "/home/u/.local/share/codec-workbench"
    assert parse([], {"XDG_DATA_HOME": "/xdg"}).data_dir == "/xdg/codec-workbench"
    assert parse([], {"CODEC_DATA_DIR": str(tmp_path)}).data_dir == str(tmp_path)
    assert parse(["--data-dir", "/flag"], {"CODEC_DATA_DIR": str(tmp_path)}).data_dir == "/flag"
