"""The dataset card: ``README.md`` in the output folder, written from the manifest, for the people who
get the codes without this project: what made them, with which settings, what is in the shards and
how to load them, and what is not in them (errors, skipped files, columns not copied).

Its YAML header names the shards as the data files, so ``datasets.load_dataset(OUT)`` reads the folder
as it is, and so does the Hub when the folder is uploaded.
"""

from __future__ import annotations

from collections import Counter

CARD_FILE = "README.md"
ERRORS_SHOWN = 10  # error lines quoted in the card; errors.jsonl has them all

SCHEMA = (
    ("index", "int64", "the row's position in the input"),
    ("audio", "string", "what names the row: the audio path as given, the path in the folder, a tar sample's key"),
    ("source", "string", "the input file the row came from (Parquet file, tar shard), or empty"),
    ("source_sha256", "string", "SHA-256 of the audio's bytes"),
    ("audio_codes", "list<list<int16>[16]>", "the codes: one list of 16 codebook indices (0-2047) per frame"),
    ("frames", "int32", "code frames (12.5 per second of audio)"),
    ("original_samples", "int64", "24 kHz samples before padding to whole frames (decode, then cut to this)"),
    ("duration_s", "float64", "seconds of audio"),
    ("model", "string", "the checkpoint that made the codes"),
    ("versions", "string", "JSON: the package versions that shape the codes"),
)


def dataset_card(manifest: dict, errors: list[dict]) -> str:
    """README.md for the output folder."""
    files, audio, job = manifest["files"], manifest["audio"], manifest["job"]
    engine = manifest["settings"]["engine"]
    fields = manifest.get("fields") or {}
    inputs = manifest.get("input") or {}
    lines = [
        "---",
        "configs:",
        "- config_name: default",
        '  data_files: "shards/*.parquet"',
        "---",
        "",
        "# Speech codes: Qwen3-TTS-Tokenizer-12Hz",
        "",
        f"Made by `python -m core tokenize` (Codec Workbench) from `{job['input']}` ({job['input_kind']}).",
        "",
        f"- **Model**: `{job['model']}`; {engine.get('dtype', 'float32')} encodes, "
        + ("strict fp32 convolutions" if engine.get("strict_fp32_encode", True) else "TF32 convolutions allowed")
        + f", on {engine.get('device', '?')}.",
        f"- **Rows**: {files['encoded']} encoded of {files['total']} in the input; {files['errors']} errors "
        f"(`errors.jsonl`); {audio['hours']:.4f} hours of audio, {manifest['codes']['frames']} code frames "
        f"in {manifest['shards']} shard(s).",
        f"- **Limits**: files up to {job['max_duration_s']:g} s and {job['max_file_mb']:g} MiB.",
    ]
    if inputs.get("random_weights"):
        lines.append(
            "- **Random weights**: these codes come from a checkpoint with random weights: they say nothing about speech."
        )
    lines += [
        "",
        "## Loading",
        "",
        "```python",
        "import datasets",
        'codes = datasets.load_dataset("parquet", data_files="shards/*.parquet", split="train")',
        '# or, without datasets: pyarrow.parquet.read_table("shards")',
        "```",
        "",
        "`finetune.jsonl` (when written) is the Qwen3-TTS fine-tuning format: each row's fields and `audio_codes`.",
        "",
        "## Columns",
        "",
        "| column | type | what |",
        "|---|---|---|",
        *[f"| `{name}` | {kind} | {what} |" for name, kind, what in SCHEMA],
    ]
    for name in fields.get("fields", []):
        note = "JSON text (mixed types in the input)" if name in fields.get("fields_as_json", []) else "as in the input"
        lines.append(f"| `{name}` | input field | {note} |")
    for original, column in fields.get("renamed", {}).items():
        lines.append(f"\nThe input field `{original}` is stored as `{column}`: its name is one of ours.")
    lines += _not_here(inputs, errors)
    return "\n".join(lines) + "\n"


def _not_here(inputs: dict, errors: list[dict]) -> list[str]:
    lines = ["", "## Not in the shards", ""]
    skipped = inputs.get("skipped") or {}
    if skipped:
        by_ext = ", ".join(f"{n} `{ext}`" for ext, n in skipped.items())
        listed = f" (listed in `{inputs['skipped_list']}`)" if inputs.get("skipped_list") else ""
        lines.append(f"- **Skipped files** (not audio): {sum(skipped.values())}: {by_ext}{listed}.")
    for what, why in (inputs.get("left_out") or {}).items():
        lines.append(f"- **Not copied**: `{what}`: {why}.")
    if errors:
        reasons = Counter(e["reason"].split(";")[0][:100] for e in errors)
        lines.append(f"- **Errors**: {len(errors)} rows without codes; every one is a line of `errors.jsonl`:")
        lines += [f"  - {n} x {reason}" for reason, n in reasons.most_common(ERRORS_SHOWN)]
    if len(lines) == 3:
        lines.append("Nothing: every row of the input has codes.")
    return lines
