"""Errors the engine raises. Their messages are shown to users as they are: each one says
what went wrong, with which file or setting, and what to do about it."""


class CodecError(Exception):
    """Base class of every error a user can act on."""


class SettingsError(CodecError):
    """A setting (CLI flag or environment variable) is invalid for this machine."""


class AudioInputError(CodecError):
    """An audio file or array cannot be used as input (empty, corrupt, too long, ...)."""


class TokenFileError(CodecError):
    """A token file is not a valid Codec Workbench token file."""


class WeightsError(CodecError):
    """The model weights are missing or cannot be loaded."""


class EngineNotReady(CodecError):
    """A job was asked of an engine that has no model loaded."""


class OutOfMemory(CodecError):
    """A job did not fit in device memory even at the smallest chunk size."""


class LiveSessionError(CodecError):
    """A live session refused input (too long, faster than real time) or has ended."""


class LiveBusy(LiveSessionError):
    """Every live session slot is in use (or live mode is off)."""


class TrainingError(CodecError):
    """A fine-tuning run cannot start or go on (bad data, settings or output folder)."""
