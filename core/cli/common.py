"""What the commands share: the engine from the flags, and output paths that never overwrite."""

from __future__ import annotations

import logging
from pathlib import Path

from core.errors import CodecError


def engine_from_args(args):
    """The engine of the flags, loaded; a CodecError (printed once, as ``error: ...``) when it cannot be."""
    from core.model.engine import Engine
    from core.settings import settings_from_args

    engine = Engine(settings_from_args(args))
    engine_log = logging.getLogger("core.model.engine")
    before = engine_log.level
    if not getattr(args, "verbose", False):  # the engine logs its load failure; the CLI prints it once
        engine_log.setLevel(logging.CRITICAL)
    try:
        loaded = engine.load()
    finally:
        engine_log.setLevel(before)
    if not loaded:
        raise CodecError(engine.error)
    if engine.settings.compare_model:  # asked for by name: a second model that cannot be loaded stops the command
        from core.model.second import load_second

        second = load_second(engine, engine.settings.compare_model)
        if not second.ready:
            raise CodecError(f"The second checkpoint {engine.settings.compare_model} was not loaded: {second.error}")
    return engine


def out_path(directory: Path, source: Path, suffix: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (source.stem + suffix)
    if path.exists():
        raise CodecError(f"{path} already exists; choose another --output-dir or remove it.")
    return path


def check_outputs(files: list[Path], directory: Path, suffixes: tuple[str, ...]) -> None:
    """Before any work: refuse inputs whose outputs would collide (b/x.wav and c/x.wav both make
    x.npz) or that already exist, so a run never stops half-way with some files written."""
    owners: dict[Path, Path] = {}
    for source in files:
        for suffix in suffixes:
            path = directory / (source.stem + suffix)
            if path in owners:
                raise CodecError(
                    f"{owners[path]} and {source} have the same name: both would write {path}. "
                    "Rename one, or run them with separate --output-dir folders."
                )
            owners[path] = source
            if path.exists():
                raise CodecError(f"{path} already exists; choose another --output-dir or remove it.")
