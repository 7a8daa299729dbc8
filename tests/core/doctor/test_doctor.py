"""``python -m core doctor``: each check fails when its condition is broken for real (no model, a
decoder missing, a folder too full or unwritable, a tensor moved off the device, a port taken), the GPU
checks judge the text nvidia-smi prints and the facts PyTorch gives, and --json is stable."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.doctor import FAIL, PASS, SKIPPED, WARN, DoctorOptions, gather, gpu, host, needs, run_doctor, tones
from core.doctor.findings import SCHEMA_VERSION
from core.doctor.run import data_dir_of
from core.units import MIB
from core.versions import installed_versions

ROOT = Path(__file__).resolve().parents[3]
CHECK_NAMES = [
    "model",
    "gpu_driver",
    "gpu_torch",
    "gpu_same",
    "cuda_versions",
    "placement",
    "memory",
    "tones",
    "cpu_decode",
    "supervisor",
    "audio_decoders",
    "packages",
    "port",
    "temp_dir",
    "data_dir",
    "abx_store",
    "shared_test_store",
    "judging_models",
]  # the documented order
CHECK_KEYS = {"name", "title", "status", "evidence", "fix", "data", "said"}

# nvidia-smi output as printed on an H200 host (query CSV and the plain table's header)
H200_UUID = "GPU-5c1d2a33-8f0e-4b6a-9d1c-2f3e4a5b6c7d"
SMI_CSV = f"0, {H200_UUID}, NVIDIA H200, 143771, 143156, 570.124.06\n"
SMI_HEADER = """Mon Nov 30 02:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
"""


TORCH_UUID = H200_UUID.removeprefix("GPU-")  # PyTorch prints the same UUID without the prefix


def torch_facts(cuda="12.8", uuid=TORCH_UUID, capability="9.0", available=True, arch=("sm_80", "sm_90", "sm_100")):
    """PyTorch facts as gather.torch_facts() returns them on a CUDA machine."""
    devices = [{"index": 0, "name": "NVIDIA H200", "uuid": uuid, "total_mib": 143771.0, "capability": capability}]
    return {
        "torch_version": "2.11.0+cu128",
        "torch_cuda": cuda,
        "cuda_available": available,
        "device_count": len(devices) if available else 0,
        "devices": devices if available else [],
        "arch_list": list(arch),
        "visible_devices": None,
    }


# --------------------------------------------------------------------------- GPU (facts as text)


def test_smi_output_is_parsed():
    gpus = gpu.parse_smi_gpus(SMI_CSV + "1, GPU-ffff, NVIDIA H200, [N/A], [N/A], 570.124.06\n")
    assert [g["index"] for g in gpus] == [0, 1] and gpus[0]["total_mib"] == 143771 and gpus[1]["free_mib"] is None
    assert gpu.parse_smi_header(SMI_HEADER) == ("570.124.06", "12.8")


def test_driver_check():
    assert gpu.check_driver("cuda:0", SMI_CSV).status == PASS
    assert gpu.check_driver("cpu", None, "nvidia-smi not found on PATH").status == SKIPPED
    missing = gpu.check_driver("cuda:0", None, "nvidia-smi not found on PATH")
    assert missing.status == FAIL and "nvidia-smi not found" in missing.evidence and "driver" in missing.fix
    no_devices = gpu.check_driver("cuda:0", "No devices were found\n")
    assert no_devices.status == FAIL


def test_torch_check():
    assert gpu.check_torch("cuda:0", torch_facts()).status == PASS
    assert gpu.check_torch("cpu", torch_facts(available=False)).status == SKIPPED
    assert gpu.check_torch("cuda:0", torch_facts(available=False)).status == FAIL
    assert gpu.check_torch("cuda:0", torch_facts(cuda=None)).fix.startswith("install the CUDA build")
    wrong_index = gpu.check_torch("cuda:3", torch_facts())
    assert wrong_index.status == FAIL and "sees 1 GPU" in wrong_index.evidence


def test_same_gpu_is_matched_by_uuid():
    assert gpu.check_same_gpu("cuda:0", SMI_CSV, torch_facts()).status == PASS
    other = gpu.check_same_gpu("cuda:0", SMI_CSV, torch_facts(uuid="0000-1111"))
    assert other.status == FAIL and "0000-1111" in other.evidence and "CUDA_VISIBLE_DEVICES" in other.fix
    assert gpu.check_same_gpu("cuda:0", SMI_CSV, torch_facts(uuid="")).status == WARN  # only the name to go on
    assert gpu.check_same_gpu("cpu", None, torch_facts(available=False)).status == SKIPPED


@pytest.mark.parametrize(
    ("driver_cuda", "torch_cuda", "arch", "status"),
    [
        ("12.8", "12.8", ("sm_90",), PASS),
        ("12.8", "12.6", ("sm_90",), PASS),
        ("12.4", "12.8", ("sm_90",), WARN),  # minor-version compatibility only
        ("12.8", "13.0", ("sm_90",), FAIL),  # the driver is a major version behind
        ("12.8", "12.8", ("sm_80",), FAIL),  # no kernels for compute 9.0
        ("12.8", "12.8", ("sm_80", "compute_80"), PASS),  # PTX that can be compiled for 9.0
    ],
)
def test_versions_check(driver_cuda, torch_cuda, arch, status):
    header = SMI_HEADER.replace("CUDA Version: 12.8", f"CUDA Version: {driver_cuda}")
    found = gpu.check_versions("cuda:0", header, torch_facts(cuda=torch_cuda, arch=arch))
    assert found.status == status, found
    if status != PASS:
        assert found.fix


def test_placement_names_a_tensor_moved_to_another_device(tiny_engine):
    model = tiny_engine.model
    tensors = list(model.named_parameters()) + list(model.named_buffers())
    assert gpu.check_placement(tensors, "cpu", "float32").status == PASS
    name = tensors[3][0]
    moved = [(n, t.to("meta") if n == name else t) for n, t in tensors]  # a copy: the engine's model is untouched
    found = gpu.check_placement(moved, "cpu", "float32")
    assert (
        found.status == FAIL
        and f"{name} (meta" in found.evidence
        and found.data["strays"] == [f"{name} (meta, float32)"]
    )
    cast = [(n, t.double() if n == name else t) for n, t in tensors]
    assert "float64" in gpu.check_placement(cast, "cpu", "float32").evidence
    assert gpu.check_placement(tensors, "cuda:0").status == FAIL  # everything is on the CPU
    assert gpu.check_placement([], "cpu").status == SKIPPED


def test_placement_compares_the_device_index():
    t = torch.zeros(2)
    assert gpu.check_placement([("w", t)], "cpu").status == PASS
    fake = type(
        "T", (), {"device": torch.device("cuda", 1), "dtype": torch.float32, "is_floating_point": lambda s: True}
    )
    assert "w (cuda:1" in gpu.check_placement([("w", fake())], "cuda:0").evidence


def test_memory_check_uses_the_engine_estimate(tiny_engine):
    from core.doctor import run

    estimates = run._estimates(tiny_engine, (("30 s", 30.0), ("10 min", 600.0)))  # what the doctor gathers
    assert [e["peak_mib"] for _, e in estimates] == [
        tiny_engine.estimate("roundtrip", seconds=s).peak_mib for s in (30.0, 600.0)
    ]
    assert gpu.check_memory(estimates).status == PASS
    short, long = estimates
    starved = [(label, {**e, "fits": False, "available_mib": e["peak_mib"] / 2}) for label, e in estimates]
    assert gpu.check_memory(starved).status == FAIL
    assert gpu.check_memory([short, (long[0], {**long[1], "fits": False})]).status == WARN
    assert gpu.check_memory([short, (long[0], {**long[1], "fits": False})], max_duration_s=60).status == PASS
    assert gpu.check_memory([]).status == SKIPPED


# --------------------------------------------------------------------------- model round trip


def test_tones_round_trip_at_four_rates(tiny_engine):
    found = tones.check_tones(lambda x: tiny_engine.encode_array(x).codes, lambda c: tiny_engine.decode(c).samples)
    assert found.status == PASS, found
    assert set(found.data["results"]) == {"8000", "16000", "44100", "48000"}
    assert all(r["frames"] == r["expected_frames"] == 13 for r in found.data["results"].values())


def test_tones_fail_on_empty_codes(tiny_engine):
    calls = []

    def encode(x):
        calls.append(x.size)
        codes = tiny_engine.encode_array(x).codes
        return codes[:0] if len(calls) == 1 else codes  # the first rate (8 kHz) comes back empty

    found = tones.check_tones(encode, lambda c: tiny_engine.decode(c).samples)
    assert found.status == FAIL and "8000 Hz: empty codes" in found.evidence


# --------------------------------------------------------------------------- host


def test_the_audio_decoders_are_checked_in_pyav_not_on_path(monkeypatch, tmp_path):
    """Issue 19, finding 11: no system ffmpeg is needed (PyAV carries its libraries): a PATH
    without ffmpeg fails nothing; a decoder PyAV lacks does."""
    monkeypatch.setenv("PATH", str(tmp_path))
    found = needs.check_audio_decoders(*gather.audio_decoders(needs.NEEDED_DECODERS))
    assert found.status == PASS and "mp3" in found.evidence and "aac" in found.evidence
    missing = needs.check_audio_decoders(*gather.audio_decoders(("mp3", "no_such_codec")))
    assert missing.status == FAIL and "no_such_codec" in missing.evidence
    assert needs.check_audio_decoders(None, {}, "No module named 'av'").status == FAIL


def test_a_temp_folder_without_room_fails(tmp_path):
    free, error = gather.folder(tmp_path / "temp")
    assert error is None and free > 0
    assert host.check_folder("temp_dir", "t", str(tmp_path), free, error, need_mib=1).status == PASS
    full = host.check_folder("temp_dir", "t", str(tmp_path), free, error, need_mib=free / MIB + 1)
    assert full.status == FAIL and "MiB free" in full.evidence


def test_an_unwritable_data_folder_fails(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    free, error = gather.folder(blocker / "data")  # root ignores permissions; a file in the path stops anyone
    found = host.check_folder("data_dir", "d", str(blocker / "data"), free, error, need_mib=1)
    assert found.status == FAIL and "cannot write" in found.evidence and "writable" in found.fix


def test_a_taken_port_fails_and_a_free_one_passes():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        taken = host.check_port("127.0.0.1", port, *gather.port("127.0.0.1", port))
        assert taken.status == FAIL and f"sport = :{port}" in taken.fix and taken.data["state"] == "taken"
    assert host.check_port("127.0.0.1", port, *gather.port("127.0.0.1", port)).status == PASS


def test_packages_pinned_and_installed():
    pins = host.parse_pins("torch==2.11.0  # the engine\nnumpy>=1\nqwen_tts[extra]==0.1.1\n")
    assert pins == {"torch": "2.11.0", "qwen-tts": "0.1.1"}
    assert host.check_packages(pins, {"torch": "2.11.0", "qwen-tts": "0.1.1"}).status == PASS
    bad = host.check_packages(pins, {"torch": "2.10.0", "qwen-tts": None})
    assert bad.status == FAIL and "qwen-tts" in bad.evidence and "torch 2.10.0 (pinned 2.11.0)" in bad.evidence
    real = host.parse_pins((ROOT / "requirements.txt").read_text())
    assert host.check_packages(real, installed_versions(real)).status == PASS  # this checkout's own venv


SUPERVISORD_LOG = """2026-11-30 01:00:00,001 INFO spawned: 'webui' with pid 4242
2026-11-30 01:00:03,120 WARN exited: webui (exit status 1; not expected)
2026-11-30 01:00:09,500 INFO gave up: webui entered FATAL state, too many start retries too quickly
"""
WEBUI_LOG = """2026-11-30 01:00:02 INFO webui: loading Qwen/Qwen3-TTS-Tokenizer-12Hz on cuda:0
2026-11-30 01:00:03 ERROR webui: cannot serve on 127.0.0.1:7860 ([Errno 98] Address already in use)
"""


def test_supervisor_state_and_last_exit_reason():
    fatal = host.check_supervisor(
        "webui                            FATAL     Exited too quickly (process log may have details)\n",
        None,
        SUPERVISORD_LOG,
        WEBUI_LOG,
    )
    assert fatal.status == FAIL and "FATAL" in fatal.evidence and "Address already in use" in fatal.evidence
    assert "exit status 1" in fatal.data["last_exit"] and "gave up" in fatal.data["last_exit"]
    assert "restart webui" in fatal.fix
    running = host.check_supervisor("webui   RUNNING   pid 4300, uptime 0:10:00\n", None, "", "")
    assert running.status == PASS and running.data["last_exit"] is None
    backoff = host.check_supervisor("webui   BACKOFF   Exited too quickly\n", None, SUPERVISORD_LOG, "")
    assert backoff.status == WARN
    absent = host.check_supervisor(None, "no such file", SUPERVISORD_LOG, "")
    assert absent.status == SKIPPED and "exit status 1" in absent.evidence


def test_supervisor_not_running_here_is_skipped():
    status, error = gather.supervisor(ROOT / "no-such.conf", host.PROGRAM)
    assert status is None and "not found" in error


# --------------------------------------------------------------------------- the whole run


def _options(tmp_path, **changes) -> DoctorOptions:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return DoctorOptions(
        **{
            "port": port,
            "temp_dir": tmp_path / "temp",
            "data_dir": tmp_path / "data",
            "temp_need_mib": 1,
            "data_need_mib": 1,
            **changes,
        }
    )


def test_a_run_reports_every_check_with_stable_keys(tiny_engine, tmp_path):
    report = run_doctor(tiny_engine, _options(tmp_path))
    doc = json.loads(json.dumps(report.to_dict()))
    assert set(doc) == {"schema", "ok", "counts", "seconds", "checks"} and doc["schema"] == SCHEMA_VERSION
    assert [c["name"] for c in doc["checks"]] == CHECK_NAMES
    assert all(set(c) == CHECK_KEYS for c in doc["checks"])
    by_name = {c["name"]: c for c in doc["checks"]}
    checks = ("model", "placement", "memory", "tones", "port", "temp_dir", "data_dir", "packages", "abx_store")
    checks = (*checks, "shared_test_store")
    for name in (*checks, "judging_models"):
        assert by_name[name]["status"] == PASS, by_name[name]
    assert "random weights" in by_name["model"]["evidence"]
    assert by_name["gpu_driver"]["status"] in (SKIPPED, PASS)  # no GPU here: skipped, which does not fail
    assert doc["ok"] == (doc["counts"]["fail"] == 0) and report.exit_code == (0 if doc["ok"] else 1)
    text = report.to_text()
    assert all(c["title"] in text for c in doc["checks"])


def test_the_data_folder_comes_from_the_settings(monkeypatch, tmp_path):
    from core.settings import settings_from_args

    monkeypatch.setenv("CODEC_DATA_DIR", str(tmp_path / "env"))
    assert data_dir_of(settings_from_args(None)) == tmp_path / "env"


def test_cli_json_and_exit_code(tiny_checkpoint, tmp_path, monkeypatch, cli):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    options = _options(tmp_path)
    monkeypatch.setenv("CODEC_DATA_DIR", str(blocker / "data"))  # the data folder as the service sets it
    proc = cli(
        "doctor",
        "--json",
        "--model",
        tiny_checkpoint,
        "--device",
        "cpu",
        "--port",
        options.port,
        "--temp-dir",
        tmp_path / "t",
    )
    doc = json.loads(proc.stdout)
    by_name = {c["name"]: c for c in doc["checks"]}
    assert by_name["data_dir"]["status"] == FAIL and doc["ok"] is False and proc.returncode == 1
    assert by_name["tones"]["status"] == PASS and doc["engine"]["state"] == "ready"


@pytest.mark.parametrize(
    "device,dtype,timings,status,words",
    [
        ("cuda:0", "float32", {"float32": 1.0, "bfloat16": 0.1}, SKIPPED, "cuda:0"),
        ("cpu", "float32", None, SKIPPED, "no model loaded"),
        ("cpu", "float32", {"float32": 0.29, "bfloat16": 0.10}, PASS, "`--decode-dtype bfloat16` would decode 2.9x"),
        ("cpu", "float32", {"float32": 0.10, "bfloat16": 3.2}, PASS, "float32 decode, the faster or exact choice"),
        ("cpu", "bfloat16", {"float32": 0.29, "bfloat16": 0.10}, PASS, "bfloat16 decode, the faster"),
        ("cpu", "bfloat16", {"float32": 0.10, "bfloat16": 3.2}, WARN, "32.0x slower than fp32 here"),
    ],
)
def test_cpu_decode_precision_is_judged_from_measured_decodes(device, dtype, timings, status, words):
    found = host.check_cpu_decode(device, dtype, "Some CPU", timings, 4)
    assert found.status == status and words in found.evidence, found
    assert ("float32" in found.fix) == (status == WARN)


def test_the_precision_advice_comes_from_a_decode_measured_here(tiny_engine, tmp_path):
    """Issue 19, finding 11: the advice came from /proc/cpuinfo flags and a figure from another machine."""
    timings = gather.decode_timings(tiny_engine, 2)
    assert set(timings) == {"float32", "bfloat16"} and all(t > 0 for t in timings.values())
    found = host.check_cpu_decode("cpu", "float32", gather.cpu()[0], timings, 2)
    assert found.data["float32_s"] == timings["float32"] and "2 frames decoded in" in found.evidence


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu avx512f amx_bf16\n\nprocessor\t: 1\n"
    )
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\n")
    assert gather.cpu(x86) == ("Intel(R) Xeon(R)", frozenset({"fpu", "avx512f", "amx_bf16"}))
    assert gather.cpu(arm) == (None, frozenset({"fp", "asimd", "bf16"}))
    assert gather.cpu(tmp_path / "missing") == (None, frozenset())


# --------------------------------------------------------------------------- issue 19: what the app needs


@pytest.mark.slow  # the doctor in a real process: ~18 s; make test runs it
def test_a_missing_model_fails_the_doctor_and_its_exit_code(tmp_path):
    """Finding 11: "nothing failed: 6 passed, 0 failed, 8 skipped" and exit 0 with no model."""
    options = _options(tmp_path)
    argv = [sys.executable, "-m", "core", "doctor", "--json", "--model", str(tmp_path / "no-such-model")]
    argv += ["--device", "cpu", "--port", str(options.port), "--temp-dir", str(tmp_path / "t")]
    env = {**os.environ, "CODEC_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=env)
    doc = json.loads(proc.stdout)
    model = {c["name"]: c for c in doc["checks"]}["model"]
    assert proc.returncode == 1 and doc["ok"] is False
    assert model["status"] == FAIL and "does not exist" in model["evidence"] and "CODEC_MODEL" in model["fix"]


def test_a_missing_model_fails_even_when_not_loaded(tmp_path):
    """``--no-model``: the files are looked at, and their absence fails."""
    from core.model.engine import Engine
    from core.settings import Settings

    unloaded = Engine(Settings(model=str(tmp_path / "no-such-model"), device="cpu", data_dir=str(tmp_path / "d")))
    report = run_doctor(unloaded, _options(tmp_path))
    model = {f.name: f for f in report.findings}["model"]
    assert model.status == FAIL and "does not exist" in model.evidence and report.exit_code == 1


def test_an_unreadable_checkpoint_fails_without_loading_it(tiny_checkpoint, tmp_path):
    broken = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not safetensors")
    path, error = gather.model_files(str(broken))
    assert path is None and "safetensors" in error
    assert needs.check_model(str(broken), "unloaded", path, error, False).status == FAIL
    assert gather.model_files(str(tiny_checkpoint))[0] == str(tiny_checkpoint)


def test_a_damaged_blind_test_database_fails_the_doctor(tmp_path):
    from core.doctor.run import _blind_test_store
    from core.listening.abx_db import DB_NAME

    assert needs.check_blind_test_store(*_blind_test_store(tmp_path / "data")).status == PASS  # made on first use
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / DB_NAME).write_bytes(b"not a database" * 100)
    store = needs.check_blind_test_store(*_blind_test_store(tmp_path / "data"))
    assert store.status == FAIL and "damaged" in store.evidence


def test_a_damaged_shared_tests_database_fails_the_doctor(tmp_path):
    from core.doctor.run import _shared_test_store
    from core.listening.shared_test_db import DB_NAME
    from core.settings import Settings

    settings = Settings(data_dir=str(tmp_path / "data"))
    assert needs.check_shared_test_store(*_shared_test_store(settings, tmp_path / "data")).status == PASS
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / DB_NAME).write_bytes(b"not a database" * 100)
    store = needs.check_shared_test_store(*_shared_test_store(settings, tmp_path / "data"))
    assert store.status == FAIL and "damaged" in store.evidence
