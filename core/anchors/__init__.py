"""Reference codecs ("anchors"): the same clip through codecs people know, at stated bitrates.

A listener asks "is 2.2 kbit/s good?"; a phone call, Opus, MP3 and the MUSHRA low-pass anchors
answer it when heard beside the codec. Each anchor is made from the clip by a real encoder through
PyAV (``encoders``) or by a filter (``lowpass``), decoded back to 24 kHz mono, sample-aligned with
the original and as long as it. Which ones exist and how they are made: ``catalog``; making a
clip's anchors (with a message for each one that cannot be made): ``make``, loaded on first use.

    from core.anchors import make_anchors, parse_anchors
    made = make_anchors(samples, parse_anchors("opus6,amr"))
"""

from core.anchors.catalog import ANCHORS, BY_ID, DEFAULT_ANCHORS, Anchor, anchor_ids, anchor_names, parse_anchors


def __getattr__(name: str):
    """``make``'s names on first use: it imports PyAV and SciPy, and ``core.settings`` reads the
    catalogue at start-up without needing either."""
    if name in _FROM_MAKE:
        from core.anchors import make

        return getattr(make, name)
    raise AttributeError(f"module 'core.anchors' has no attribute {name!r}")


_FROM_MAKE = ("AnchorAudio", "AnchorSet", "Problem", "make_anchors")

__all__ = [
    "ANCHORS",
    "BY_ID",
    "DEFAULT_ANCHORS",
    "Anchor",
    "AnchorAudio",
    "AnchorSet",
    "Problem",
    "anchor_ids",
    "anchor_names",
    "make_anchors",
    "parse_anchors",
]
