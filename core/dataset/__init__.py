"""Tokenize speech datasets at scale: ``python -m core tokenize INPUT -o OUT`` (docs/scaling.md).

inputs (folder / JSONL / Parquet) -> pipeline (Ray Data) -> shards (atomic Parquet, resume) ->
export (manifest.json, errors.jsonl, fine-tuning JSONL); progress shows rates and the ETA.
Nothing here imports Ray or the model until a job runs.
"""
