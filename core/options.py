"""Options from one table: every field of an options dataclass gets a command-line flag and a
``CODEC_*`` environment variable, from the field itself.

A field is declared with :func:`option` (default, help, optionally its flag); its variable is
``CODEC_`` + the field name in capitals, its flag ``--`` + the name with dashes unless given. Flags
win over variables, which win over defaults. Values are checked by the dataclass's own
``__post_init__``; a value that is not even of the right type raises :class:`SettingsError` naming
the flag and the variable. ``core.settings.Settings`` (the engine) and ``webui``'s own options
both go through here, so a new field is one line.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import SettingsError

ENV_PREFIX = "CODEC_"  # every variable starts with this
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def option(default: Any, help: str, *, flag: str | None = None, choices: tuple[str, ...] = ()) -> Any:
    """A dataclass field with a default, a help line, optionally a flag other than its name's and the
    values it may take (matched without regard to case, stored as written here)."""
    return field(default=default, metadata={"help": help, "flag": flag, "choices": choices})


def _bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(text)


_CASTS: dict[str, Callable[[str], Any]] = {"str": str, "float": float, "int": int, "bool": _bool}


@dataclass(frozen=True)
class Spec:
    name: str  # the dataclass field
    flag: str  # e.g. "--max-duration"
    env: str  # e.g. "CODEC_MAX_DURATION_S"
    kind: str  # "str", "float", "int" or "bool" (from the field's annotation)
    help: str  # one line for --help
    choices: tuple[str, ...] = ()  # the values a str option may take (empty: any)

    def parse(self, raw: str) -> Any:
        """``raw`` as the option's type; ValueError when it is not one."""
        value = _CASTS[self.kind](raw)
        if self.choices:
            value = next(c for c in (*self.choices, None) if c is None or c.lower() == str(value).lower())
            if value is None:
                raise ValueError(raw)
        return value

    def cast(self, raw: str) -> Any:
        try:
            return self.parse(raw)
        except ValueError as e:
            raise SettingsError(f"{self.env} / {self.flag}: {raw!r} is not a valid {self.kind}{self._hint()}.") from e

    def _hint(self) -> str:
        if self.choices:
            return f" (one of {', '.join(self.choices)})"
        return " (use 1/0, true/false, yes/no or on/off)" if self.kind == "bool" else ""

    def argparse_type(self, raw: str) -> Any:
        try:
            return self.parse(raw)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{raw!r} is not a valid {self.kind}{self._hint()}") from e


def specs(cls) -> list[Spec]:
    """The flag and variable of every field of the options dataclass ``cls``, in field order."""
    out = []
    for f in dataclasses.fields(cls):
        kind = str(f.type).replace(" | None", "").strip()
        if kind not in _CASTS:
            raise TypeError(f"{cls.__name__}.{f.name}: options are str, float, int or bool, not {f.type}")
        flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
        out.append(
            Spec(
                f.name,
                flag,
                ENV_PREFIX + f.name.upper(),
                kind,
                f.metadata.get("help", ""),
                tuple(f.metadata.get("choices") or ()),
            )
        )
    return out


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls) -> None:
    """One flag per field of ``cls`` (default None: the variable or the field's default applies)."""
    for spec in specs(cls):
        text = f"{spec.help} [env {spec.env}]"
        if spec.kind == "bool":
            parser.add_argument(
                spec.flag, dest=spec.name, default=None, action=argparse.BooleanOptionalAction, help=text
            )
        else:
            parser.add_argument(spec.flag, dest=spec.name, default=None, type=spec.argparse_type, help=text)


def values(cls, args: argparse.Namespace | None, env: Mapping[str, str]) -> dict[str, Any]:
    """Field values given by flags or variables (flags win); fields given by neither are left out."""
    out: dict[str, Any] = {}
    for spec in specs(cls):
        raw = getattr(args, spec.name, None) if args is not None else None
        if raw is None:
            raw = env.get(spec.env)
        if raw is None or raw == "":
            continue
        out[spec.name] = spec.cast(raw) if isinstance(raw, str) else raw  # our parser has cast flags already
    return out


def build(cls, args: argparse.Namespace | None, env: Mapping[str, str], **defaults: Any):
    """An instance of ``cls`` from flags, then variables, then ``defaults``, then the field defaults."""
    return cls(**{**defaults, **values(cls, args, env)})
