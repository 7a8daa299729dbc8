"""The doctor's evidence and fixes as data (a code and its fields) and their English sentences.

A check hands :func:`core.doctor.findings.finding` a :class:`Said` (or a tuple of them, said one after
another with "; ") instead of a string; the command line and the JSON report say ``ENGLISH[code]``
filled with its fields, the web page the same code from its catalogue
(``webui/locales/<language>/doctor.json``, key ``doctor.note.<code>``, the same placeholders). Fields
are numbers, names, paths, commands and what a system said (an error message): they stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core import notes

ENGLISH = {
    # shared
    "no_model": "no model loaded",
    "runs_on": "the engine runs on {device}",
    "raw": "{text}",
    # model
    "model_error": "{source}: {error}",
    "model_missing": "{source}: no checkpoint found",
    "model_not_loaded": "files of a checkpoint found in {place}, not loaded (`--no-model`)",
    "model_loaded": "loaded from {place}",
    "model_rate": "its decoder writes {khz:g} kHz",
    "model_random": "random weights: a test checkpoint (no quality claims)",
    "fix_model": "point `--model` / `CODEC_MODEL` at a checkpoint directory (config.json, preprocessor_config.json, "
    "*.safetensors); see docs/service.md. A random-weight test checkpoint: `python -m core build-checkpoint --tiny DIR`",
    "fix_load_model": "run the doctor without `--no-model` to load it",
    # audio decoders
    "av_missing": "PyAV cannot be imported ({error}): MP3, M4A/AAC and WebM uploads cannot be read",
    "av_lacks": "PyAV {version} lacks the decoder(s) {missing}: files needing them cannot be read",
    "av_ok": "PyAV {version}: {decoders} decoders present",
    "fix_requirements": "`.venv/bin/pip install -r requirements.txt`",
    "fix_av": "reinstall the pinned PyAV wheel: `.venv/bin/pip install --force-reinstall -r requirements.txt`",
    # databases
    "store_problem": "{place}: {problem}",
    "abx_store_ok": "{place}: opens, tables present (or made on first use)",
    "shared_store_ok": "{place}: opens (tables made on first use)",
    "fix_abx_store": "check the data folder (`--data-dir` / `CODEC_DATA_DIR`): free space, permissions, no other "
    "program holding the file; a damaged file is moved aside and recreated on the next blind test",
    "fix_shared_store": "check the data folder (`--data-dir`) or `CODEC_DATABASE_URL`: free space, permissions, the "
    "server running; a damaged SQLite file is moved aside and recreated on the next shared-test call",
    # tones
    "tone_error": "{rate} Hz: {error}",
    "tone_empty": "{rate} Hz: empty codes",
    "tone_shape": "{rate} Hz: codes {shape}, expected ({expected}, {books})",
    "tone_decoded": "{rate} Hz: decoded {got} samples for {want}, or non-finite",
    "tones_ok": "{seconds:g} s tones, frames × {books} codes: {frames}",
    "fix_tones": "the model or the resampler is broken for these rates: run `python -m core check`, reinstall "
    "requirements.txt (soxr), and report the output of `python -m core doctor --json`",
    # judging models
    "role_speaker": "speaker model",
    "role_asr": "ASR",
    "judge_failed": "the {role} {chosen} did not load or run: {error}",
    "judge_twice": "{label}: one clip embedded twice gave {shown}, not 1",
    "judge_nothing": "nothing",
    "judge_none": "no judging model was tried",
    "judge_ok": "{role}: {label} in {seconds:.2f} s",
    "judge_ok_twice": "{role}: {label} in {seconds:.2f} s, one clip embedded twice: {value:.4f}",
    "fix_judges": "Install the judging models: `.venv/bin/pip install -r requirements-judging.txt && "
    ".venv/bin/pip install --no-deps -r requirements-judging-nodeps.txt`",
    "fix_judges_chosen": "Give `--speaker-model` / `--asr` a checkpoint directory that loads (docs/judging.md), or "
    "leave them at the defaults",
    # CPU decode precision
    "decodes_on": "decodes run on {device}",
    "cpu_no_model": "no model loaded, so no decode could be measured on {cpu}",
    "cpu_this": "this CPU",
    "cpu_measured": "{frames} frames decoded in {fp32:.3f} s (fp32) and {bf16:.3f} s (bf16) on {cpu}",
    "cpu_bf16_slow": "bf16 decode is {ratio:.1f}x slower than fp32 here",
    "cpu_fp32_exact": "fp32 decode (exact)",
    "cpu_bf16_would": "`--decode-dtype bfloat16` would decode {ratio:.1f}x faster here (guarded; about 20 dB SNR "
    "from the fp32 decode on random weights)",
    "cpu_chosen": "{dtype} decode, the faster or exact choice",
    "sweep": "every precision measured here: `python -m core precision CLIP`, or the Check a port tab (docs/parity.md)",
    "fix_decode_fp32": "run with `--decode-dtype float32` (`CODEC_DECODE_DTYPE=float32`)",
    # packages
    "pins_none": "no requirements.txt with == pins found",
    "pins_missing": "missing: {names}",
    "pins_other": "other version: {names}",
    "pins_ok": "all {count} pins installed",
    "fix_pins": "`.venv/bin/pip install -r requirements.txt -r requirements-judging.txt`",
    # port
    "port_free": "{where} is free",
    "port_ours": "{where} is served by Codec Workbench (pid {pid}, {status})",
    "port_taken": "{where} is taken by another program (not our /health)",
    "port_error": "cannot listen on {where}: {error}",
    "fix_port_taken": "see who holds it: `ss -ltnp 'sport = :{port}'`; stop it or set CODEC_PORT to a free port",
    "fix_port_error": "use a host this machine has (`CODEC_HOST`) and a port above 1024 (`CODEC_PORT`)",
    # folders
    "folder_unwritable": "cannot write in {place}: {error}",
    "folder_full": "{place}: only {free_mib:.0f} MiB free, {need_mib:.0f} MiB needed",
    "folder_ok": "{place}: writable, {free_gib:.1f} GiB free",
    "fix_folder_unwritable": "make it writable for the service's user (`mkdir -p {place} && chown $USER {place}`) "
    "or point the setting elsewhere",
    "fix_folder_full": "free space there (`du -sh {place}/*`), or point the setting to a larger disk",
    # supervisord
    "sv_not_running": "supervisord is not running here ({why})",
    "sv_no_answer": "no answer",
    "sv_logged": "when it last ran, its log recorded: {reason}",
    "sv_state": "{program} {state}",
    "sv_earlier_exit": "earlier exit: {reason}",
    "sv_last_exit": "last exit: {reason}",
    "sv_not_configured": "not configured",
    "fix_sv_start": "start it with `make run` (or supervisord -c supervisord.conf)",
    "fix_sv_wait": "wait a minute, then `supervisorctl -c supervisord.conf status`; if it loops, read "
    "`supervisorctl -c supervisord.conf tail webui`",
    "fix_sv_failed": "read the reason above (`supervisorctl -c supervisord.conf tail webui`), fix it, then "
    "`supervisorctl -c supervisord.conf restart webui`",
    # GPU: driver, PyTorch, the same card, versions
    "smi_absent": "no NVIDIA driver tools ({error})",
    "smi_not_found": "nvidia-smi not found",
    "smi_no_gpu": "nvidia-smi listed no GPU",
    "asked_for": "{device} was asked for",
    "gpus_listed": "{count} GPU(s): {listed}",
    "fix_driver": "install the NVIDIA driver (or check the container runs with `--gpus all`), then run `nvidia-smi`; "
    "or start with `--device cpu`",
    "torch_build": "torch {version} (CUDA build {cuda})",
    "torch_cpu_wheel": "none: CPU-only wheel",
    "torch_cuda_but": "CUDA is available but the engine runs on {device}",
    "torch_no_cuda": "no CUDA in PyTorch and the engine runs on {device}",
    "torch_cannot": "this build cannot use a GPU",
    "torch_unavailable": "torch.cuda.is_available() is False",
    "visible_devices": "CUDA_VISIBLE_DEVICES={value}",
    "torch_count": "{device} asked for but PyTorch sees {count} GPU(s)",
    "torch_ok": "{device} = {name}, compute {capability}, {mib:.0f} MiB",
    "fix_torch_build": "install the CUDA build of the pinned torch (see requirements.txt), or use `--device cpu`",
    "fix_torch_unavailable": "run `nvidia-smi`; check CUDA_VISIBLE_DEVICES and that the driver supports this CUDA build",
    "fix_torch_count": "use `--device cuda:0..cuda:{last}`, or check CUDA_VISIBLE_DEVICES",
    "same_needs": "needs a GPU seen by both nvidia-smi and PyTorch",
    "same_ok": "PyTorch {device} is nvidia-smi GPU {index} ({name}, {uuid})",
    "same_no_uuid": "PyTorch gives no UUID; {count} nvidia-smi GPU(s) named {name}",
    "same_other": "PyTorch {device} has UUID {uuid}, which nvidia-smi does not list",
    "fix_same_no_uuid": "compare `nvidia-smi -L` with CUDA_VISIBLE_DEVICES",
    "fix_same_other": "the process sees another driver or container than the shell: check CUDA_VISIBLE_DEVICES "
    "and `nvidia-smi -L` inside the service's environment",
    "versions_needs": "needs nvidia-smi's header and a CUDA build of torch (see the checks above)",
    "versions_facts": "driver {driver} (supports CUDA up to {driver_cuda}), torch {torch} built for CUDA {built}",
    "versions_arch": "the card is compute {capability} but this torch has kernels for {arch}",
    "versions_older": "driver's CUDA {driver_cuda} is older than {built} (minor-version compatibility only)",
    "fix_versions": "update the NVIDIA driver to one that supports CUDA {built}, or install the torch wheel built "
    "for CUDA {driver_cuda} (same torch version)",
    "fix_arch": "install a torch build that lists {sm}",
    # placement and memory
    "placement_strays": "{count} of {total} tensors are not on {device}: {shown}",
    "placement_strays_dtype": "{count} of {total} tensors are not on {device} in {dtype}: {shown}",
    "placement_ok": "all {total} tensors on {device}",
    "placement_ok_dtype": "all {total} tensors on {device} in {dtype}",
    "and_more": "and {more} more",
    "fix_placement": "something moved part of the model after loading: restart the service (the engine loads every "
    "tensor onto the device) and look for code calling .to()/.cpu() on the model",
    "memory_no_model": "no model loaded: the engine cannot estimate",
    "memory_row": "{length}: ≈{need_gib:.2f} of {have_gib:.2f} GiB, {verdict}",
    "memory_row_over": "{length}: ≈{need_gib:.2f} of {have_gib:.2f} GiB, {verdict} (over max_duration_s: refused anyway)",
    "fits": "fits",
    "does_not_fit": "does not fit",
    "fix_memory": "free device memory (other processes: `nvidia-smi`), use `--dtype bfloat16` on a GPU, or a larger GPU",
    "fix_memory_long": "jobs of {lengths} will be refused: free memory or lower CODEC_MAX_DURATION_S so users learn "
    "the limit up front",
}


@dataclass(frozen=True)
class Said:
    """One sentence of a finding: a code of :data:`ENGLISH` and its fields."""

    code: str
    fields: dict = field(default_factory=dict)

    def english(self) -> str:
        return notes.say(self.code, self.fields, ENGLISH)

    def to_dict(self) -> dict:
        return {"code": self.code, "fields": dict(self.fields)}


def said(code: str, **fields) -> Said:
    if code not in ENGLISH:
        raise KeyError(f"{code!r} is not a doctor sentence; add it to core.doctor.words.ENGLISH")
    if "path" in fields:  # Gradio's client takes any {"path": ...} in a JSON output for a file to download
        raise ValueError("a doctor sentence's field may not be named 'path'; name it 'place'")
    return Said(code, fields)
