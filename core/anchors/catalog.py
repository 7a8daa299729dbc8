"""The reference codecs ("anchors") a clip can be compared with: one table, one row per anchor.

Each anchor says what a listener knows it as ("Opus 6 kbit/s"), how it is made (an FFmpeg encoder
through PyAV, or a zero-phase low-pass filter) and at what stated bitrate. Nothing here imports
PyAV or SciPy: ``core.settings`` checks ``--anchors`` against this table at start-up.

Why these settings (docs/compare.md has the measurements):

- Opus and MP3 run at a constant bitrate, so the rate on the button is the rate of every clip (a
  variable rate would fall well below it on clips with pauses). Opus uses its speech mode
  (``application=voip``); it gets the clip at 24 kHz and decides its own internal band.
- AMR-NB 12.2 kbit/s is the GSM/3G phone call: 8 kHz narrowband, 20 ms frames. Its decoder does
  not remove the encoder's 5 ms look-ahead (40 samples at 8 kHz), so that delay is taken off
  here; Ogg/Opus and MP3 carry their own delays in the file and the demuxer removes them.
- The MUSHRA anchors (ITU-R BS.1534) are the original low-passed at 3.5 and 7 kHz: no codec, so no
  bitrate.
- Every codec anchor needs ``MIN_CODEC_S`` of audio: on shorter clips its frames and look-ahead
  are so large a share that the bytes no longer match the stated rate (measured: MP3 +10% at
  0.5 s, +33% at 0.2 s), and the comparison would not be the one the button names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from core.codec import SAMPLE_RATE
from core.errors import SettingsError

MIN_CODEC_S = 1.0  # s of audio a codec anchor needs for its stated bitrate to hold (within 10%)
NARROWBAND_RATE = 8_000  # Hz, the phone call's sample rate


@dataclass(frozen=True)
class Anchor:
    id: str  # "opus6": what --anchors, the manifest and file names use
    label: str  # "Opus 6 kbit/s": the button's words (English; the page translates by id)
    key: str  # keyboard key that selects it in the flip player
    kind: str  # "codec" (an FFmpeg encoder) or "lowpass" (a filter)
    nominal_bps: float | None = None  # the stated bitrate (None: not a codec)
    encoders: tuple[str, ...] = ()  # FFmpeg encoder names, the first one PyAV has is used
    container: str = ""  # format of the in-memory file the demuxer reads back (it removes codec delays)
    rate: int = SAMPLE_RATE  # Hz the encoder runs at
    options: tuple[tuple[str, str], ...] = ()  # encoder options (AVOptions)
    delay_samples: int = 0  # look-ahead at ``rate`` that decoding leaves in (taken off after)
    cutoff_hz: float | None = None  # low-pass anchors: the band edge
    aliases: tuple[str, ...] = field(default=(), compare=False)  # other names --anchors accepts
    short: str = ""  # "LP 3.5 kHz": the checkbox's words, the same in every language ("": the label)
    familiarity: int = 0  # 1: the reference codec people know best (the blind test's next B); 0: not ranked

    @property
    def min_seconds(self) -> float:
        """The shortest clip this anchor is made for (s)."""
        return MIN_CODEC_S if self.kind == "codec" else 0.0


ANCHORS: tuple[Anchor, ...] = (  # in the order the player and the tables show them: lowest quality first
    Anchor(
        "lp3.5",
        "Low-pass 3.5 kHz",
        "f",
        "lowpass",
        cutoff_hz=3500.0,
        aliases=("lp35", "lp3500", "mushra-low"),
        short="LP 3.5 kHz",
        familiarity=6,
    ),
    Anchor(
        "lp7",
        "Low-pass 7 kHz",
        "g",
        "lowpass",
        cutoff_hz=7000.0,
        aliases=("lp7000", "mushra-mid"),
        short="LP 7 kHz",
        familiarity=5,
    ),
    Anchor(
        "amr",
        "Phone call (AMR-NB 12.2 kbit/s)",
        "p",
        "codec",
        12_200.0,
        ("libopencore_amrnb", "amr_nb"),
        "amr",
        NARROWBAND_RATE,
        delay_samples=40,  # 5 ms at 8 kHz, measured against the input (tests/core/anchors)
        aliases=("amrnb", "amr-nb", "phone"),
        short="☎ AMR-NB 12.2 kbit/s",
        familiarity=2,
    ),
    Anchor(
        "opus6",
        "Opus 6 kbit/s",
        "o",
        "codec",
        6_000.0,
        ("libopus",),
        "ogg",
        options=(("application", "voip"), ("vbr", "off")),
        familiarity=1,
    ),
    Anchor(
        "opus12",
        "Opus 12 kbit/s",
        "i",
        "codec",
        12_000.0,
        ("libopus",),
        "ogg",
        options=(("application", "voip"), ("vbr", "off")),
        familiarity=4,
    ),
    Anchor("mp3", "MP3 32 kbit/s", "m", "codec", 32_000.0, ("libmp3lame",), "mp3", aliases=("mp3-32",), familiarity=3),
)
# bench/results/anchors_bench.md: these together add well under 1 s to a 30 s round trip on 2 cores
DEFAULT_ANCHORS = "lp3.5,amr,opus6"
BY_ID = {a.id: a for a in ANCHORS}
_NAMES = {name: a for a in ANCHORS for name in (a.id, *a.aliases)}


def parse_anchors(value: str | Iterable[str] | None) -> tuple[Anchor, ...]:
    """The anchors named in ``value`` ("opus6,amr", a list of ids, "all", "none" or empty), in the
    table's order; SettingsError naming the valid ids for anything else."""
    if value is None:
        return ()
    items = value.replace(",", " ").split() if isinstance(value, str) else [str(v).strip() for v in value]
    items = [i.lower() for i in items if i]
    if items in ([], ["none"]):
        return ()
    if items == ["all"]:
        return ANCHORS
    unknown = [i for i in items if i not in _NAMES]
    if unknown:
        raise SettingsError(
            f"Unknown reference codec {unknown[0]!r} in --anchors / CODEC_ANCHORS; use ids from "
            f"{', '.join(a.id for a in ANCHORS)} (comma-separated), 'all' or 'none'."
        )
    chosen = {_NAMES[i].id for i in items}
    return tuple(a for a in ANCHORS if a.id in chosen)


def anchor_names() -> set[str]:
    """Every name --anchors accepts for a single anchor (ids and aliases, lower case)."""
    return set(_NAMES)


def anchor_ids(value: str | Iterable[str] | None) -> list[str]:
    """The ids of :func:`parse_anchors` (the UI's checkbox values)."""
    return [a.id for a in parse_anchors(value)]
