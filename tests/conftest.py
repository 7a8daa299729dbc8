"""Shared fixtures: a tiny random-weight checkpoint built once per test session, and
synthetic speech-like signals. Nothing here downloads weights."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

SAMPLE_RATE = 24_000  # Hz

# The test servers of one test process share its Gradio cache, never another process's: Gradio names
# a cached upload by its content's hash and each app deletes all it cached when it stops, so a server
# of the other xdist worker, stopping, deleted the clip this one's browser test had just uploaded
# (the app's own processes each get one too: webui.serving.storage.use_for_process).
GRADIO_CACHE = Path(tempfile.gettempdir()) / "gradio-tests" / f"pid-{os.getpid()}"
os.environ["GRADIO_TEMP_DIR"] = str(GRADIO_CACHE)


def pytest_unconfigure(config):
    """This test process's Gradio cache goes with it (its servers deleted their files; the folders stay)."""
    import shutil

    shutil.rmtree(GRADIO_CACHE, ignore_errors=True)


SERVICE_TESTS = Path(__file__).resolve().parent / "service"


HEAVY_MARKERS = ("slow", "service", "browser")  # files holding such tests start first (below)
TESTS = Path(__file__).resolve().parent
# The longest files, longest first: seconds of all their tests in a whole `make test` run (the
# junit XML, 2 cores, load 2 to 9 from other work, 2026-12-02), with the group each runs in (make test,
# make test-slow, make test-long; a file with tests of two groups runs in both). Each group's two
# processes take whole files in the order given here, so these start first and short files fill the
# end. Re-rank when a file's time changes a lot (`--junitxml`, summed per file); a file not listed
# starts after these, by its markers.
LONGEST_FIRST = (
    "service/test_service_replicas.py",  # slow, 250 s: two starts of two replicas behind nginx (SQLite, PostgreSQL)
    "webui/test_demo_flow_browser.py",  # slow, 190 s: four round trips in four browser contexts
    "core/training/test_finetune_ddp.py",  # slow, 160-370 s: four runs, two of them on 2 gloo processes
    "core/dataset/test_pipeline.py",  # slow, 145 s: a local Ray
    "core/training/test_finetune_learns.py",  # slow, 240 s: 200 steps on the CPU
    "core/training/test_finetune_resume.py",  # slow 170 s (SIGKILL, two processes) + make test 60 s
    "webui/test_finetune_browser.py",  # slow, 140 s: three fine-tuning runs (processes of their own) in a browser
    "webui/test_finetune_page.py",  # slow 60 s + make test 40 s: two fine-tuning runs through gradio_client
    "service/test_service_supervisor.py",  # slow, 145 s
    "core/judging/test_evaluate.py",  # slow 50 s + make test 40 s
    "core/nn/test_fast_decode.py",  # slow, 65 s: torch.compile of the decoder
    "core/dataset/test_resume_after_kill.py",  # slow, 65 s: two Ray starts, a kill
    "webui/test_progress_browser.py",  # slow, 60 s: two round trips of a 64 s clip
    "webui/test_share_browser.py",  # 60 s
    "webui/test_voice_card_browser.py",  # slow, 55 s
    "webui/test_compare_browser.py",  # 55 s
    "webui/test_webui_server.py",  # slow 35 s (two `python -m webui` processes) + make test 20 s
    "core/model/test_engine_memory.py",  # 45 s
    "core/test_cli.py",  # slow 30 s + make test 10 s
    "webui/test_lab_browser.py",  # 40 s
    "webui/test_webui_browser.py",  # 35 s
    "webui/test_live_browser.py",  # 35 s
    "webui/test_pcm16_copies_browser.py",  # slow, 35 s
    "test_install.py",  # slow, 35 s
    "core/parity/test_decode_parity.py",  # slow, 30 s
    "webui/test_webui_abx.py",  # 30 s
    "webui/test_long_clip_browser.py",  # long: a 10-minute clip
    "webui/test_webui_soak.py",  # long: 200 round trips
)


def pytest_collection_modifyitems(config, items):
    """Tests under tests/service are marked ``service`` (make test-fast leaves them out); GPU tests
    run only where CUDA exists (the device machine), never in CI. The files of ``LONGEST_FIRST`` are
    put first in its order, then files with slow tests, then those with service or browser tests,
    then the rest (each file's own order kept): make test's two processes take whole files in this
    order (``--dist loadfile --no-loadscope-reorder``: xdist's own reordering puts files with the
    most tests first, which left the one-test soak, the kill-and-resume and the 10-minute clip for
    the end of the run), so the long ones start early and short ones fill the end."""
    for item in items:
        if SERVICE_TESTS in Path(item.fspath).parents:
            item.add_marker(pytest.mark.service)
    longest = {TESTS / name: rank for rank, name in enumerate(LONGEST_FIRST)}
    weight: dict[
        Path, int
    ] = {}  # by LONGEST_FIRST; then a file with slow tests, with service or browser tests, the rest
    for item in items:
        marked = {m for m in HEAVY_MARKERS if item.get_closest_marker(m)}
        rank = longest.get(item.path, len(longest) + (0 if "slow" in marked else 1 if marked else 2))
        weight[item.path] = min(weight.get(item.path, rank), rank)
    items.sort(key=lambda item: weight[item.path])  # stable: collection order within each group
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # pragma: no cover - torch is a hard dependency
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A tiny Qwen3-TTS-Tokenizer-12Hz checkpoint with random weights (a few MB)."""
    from core.model.checkpoints import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-ckpt"))


@pytest.fixture(scope="session")
def tiny_checkpoint_48k(tmp_path_factory) -> Path:
    """A tiny checkpoint of the 48 kHz recipe (decoder upsample_rates [8, 5, 4, 3, 2]; same encoder)."""
    from core.model.checkpoints import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-ckpt-48k"), output_rate_hz=48_000)


@pytest.fixture(scope="session")
def second_checkpoint(tmp_path_factory) -> Path:
    """Another tiny checkpoint with other random weights (seed 1): a second model to compare."""
    from core.model.checkpoints import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-ckpt-b"), seed=1)


def speechlike(seconds: float, seed: int = 0, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """A deterministic, speech-like test signal: a gliding harmonic tone with a syllable
    envelope plus a little noise, peak about 0.5."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    f0 = 140 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 3.0 * t)) ** 2 / 4
    x = 0.35 * voiced * envelope + 0.01 * rng.standard_normal(t.size)
    return (0.5 * x / max(np.abs(x).max(), 1e-9)).astype(np.float32)


@pytest.fixture
def speech():
    """Factory fixture: speech(seconds, seed=0) -> float32 mono at 24 kHz."""
    return speechlike


@pytest.fixture(scope="session")
def session_engine(tiny_checkpoint):
    """The one session engine: ready on the tiny checkpoint (CPU), its readiness checked (the test
    round trip also warms the kernels). Shared by every test that does not change its state; a test
    that needs other settings, or unloads, makes its own. Tests ask for it as ``engine`` (or
    ``tiny_engine``); a module may define its own ``engine`` and still get this one as ``tiny_engine``."""
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    report = engine.warm_up()
    assert report.ok, report.to_dict()
    return engine


@pytest.fixture(scope="session")
def engine(session_engine):
    """The session engine (:func:`session_engine`)."""
    return session_engine


@pytest.fixture(scope="session")
def tiny_engine(session_engine):
    """The same engine under its older name (tests written before the fixtures were merged use it)."""
    return session_engine


def official_whole_codes(model, x: np.ndarray):
    """The official whole-clip encode: ``model.encode`` on all of ``x`` at once, on the model's device
    in its dtype, with cuDNN's TF32 off (full fp32 convolutions on a GPU), as codes (frames, 16) int64
    on the CPU: what every chunked, batched or streamed encode is compared with. ``model``: the
    tokenizer's model, or an ``Engine`` (its model is used)."""
    import torch

    from core.model.engine import Engine

    model = model.model if isinstance(model, Engine) else model
    parameter = next(model.parameters())
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.inference_mode():
            wav = torch.from_numpy(x)[None].to(device=parameter.device, dtype=parameter.dtype)
            out = model.encode(wav, torch.ones_like(wav, dtype=torch.long), return_dict=True)
            return out.audio_codes[0].to(torch.long).cpu()
    finally:
        torch.backends.cudnn.allow_tf32 = previous


@pytest.fixture
def whole_codes():
    """whole_codes(model_or_engine, x) -> torch.Tensor (frames, 16): the official whole-clip encode
    (:func:`official_whole_codes`; ``.numpy()`` for an array)."""
    return official_whole_codes


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys):
    """cli(*args) -> CliResult: ``python -m core ARGS`` run in this process (``core.cli.main.main``),
    with its exit code and what it printed. A subprocess per call would cost an interpreter start
    and the torch import (≈5-10 s on 2 cores) each; tests/core/test_cli.py keeps two real-process
    smoke tests for what only a process shows (JSON-only stdout, no traceback)."""
    from core.cli.main import main

    def run(*args) -> CliResult:
        capsys.readouterr()  # drop what the test printed before
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse: usage errors exit 2
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run


BOMB_FRAMES = 8_000_000  # frames of a token bomb: 256 MB of codes packed into about 1 MB (issue 19, finding 4)


def write_token_bomb(path: Path, frames: int = BOMB_FRAMES) -> Path:
    """A token file whose codes unpack to ``frames`` x 16 int16 zeros (valid shape, metadata and
    length; the checksum is left wrong: computing it would cost what the bomb costs), made
    without ever holding the codes in memory."""
    import io
    import json
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i2", "fortran_order": False, "shape": (frames, 16)})
    meta = {
        "format": "codec-workbench-tokens",
        "format_version": 1,
        "sample_rate": SAMPLE_RATE,
        "frame_rate": 12.5,
        "original_samples": frames * 1920,
        "model_source": "bomb",
        "versions": {},
        "created": "",
        "codes_sha256": "0" * 64,
    }
    metadata = io.BytesIO()
    np.save(metadata, np.array(json.dumps(meta)))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("codes.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            zeros, left = bytes(1 << 20), frames * 32
            while left:
                member.write(zeros[: min(left, len(zeros))])
                left -= min(left, len(zeros))
        archive.writestr("metadata.npy", metadata.getvalue())
    return path


@pytest.fixture(scope="session")
def token_bomb(tmp_path_factory) -> Path:
    """A 1 MB token file holding 256 MB of codes (hours over any duration limit)."""
    return write_token_bomb(tmp_path_factory.mktemp("bomb") / "bomb_tokens.npz")


def write_mp3(path: Path, samples: np.ndarray, xing: bool = True, damage_from: int | None = None) -> Path:
    """An MP3 made with the real LAME encoder inside PyAV (16 kbit/s, 24 kHz mono); ``xing``: with the
    Info frame that states its length; ``damage_from``: bytes from there on replaced by noise (a valid
    head, a corrupt body: issue 19, finding 12)."""
    import av

    options = {} if xing else {"write_xing": "0"}
    with av.open(str(path), "w", format="mp3", options=options) as container:
        stream = container.add_stream("libmp3lame", rate=SAMPLE_RATE, layout="mono")
        stream.bit_rate = 16_000
        frame = av.AudioFrame.from_ndarray(np.asarray(samples, np.float32)[None, :], format="flt", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        for packet in (*stream.encode(frame), *stream.encode(None)):
            container.mux(packet)
    if damage_from is not None:
        data = path.read_bytes()
        noise = np.random.default_rng(1).integers(0, 256, len(data) - damage_from, dtype=np.uint8).tobytes()
        path.write_bytes(data[:damage_from] + noise)
    return path


@pytest.fixture(scope="session")
def damaged_mp3(tmp_path_factory) -> Path:
    """1.5 s of speech as an MP3 whose Info frame states 1.5 s and whose body after 800 bytes is noise."""
    return write_mp3(tmp_path_factory.mktemp("mp3") / "damaged.mp3", speechlike(1.5), damage_from=800)


@pytest.fixture(scope="module")
def single_thread():
    """torch on one thread for a module (``pytestmark = pytest.mark.usefixtures("single_thread")``): work
    done a frame at a time (the live tests) is many tiny ops, 20x slower with two OpenMP threads on a
    loaded 2-core machine. References and streams then run alike."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
