"""Token usage: how much of each codebook a clip uses, instead of a picture of raw code ids.

Per codebook (over the clip's frames): how many of the 2048 codes occur, the entropy of their
distribution in bits (at most 11 = log2 2048, and at most log2(frames)), and its perplexity
2^entropy (the number of equally likely codes with that entropy). A histogram of one chosen
codebook shows which codes carry the clip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from core.codec import BITS_PER_CODE, CODEBOOK_SIZE, NUM_CODEBOOKS
from core.errors import SettingsError

MAX_ENTROPY_BITS = float(BITS_PER_CODE)  # a uniform use of all 2048 codes
FIG_WIDTH_IN = 10.0  # inches, as core.analysis.metrics figures
FIG_DPI = 100  # dots per inch


@dataclass(frozen=True)
class CodebookUsage:
    codebook: int  # 1..16 (1 is the semantic codebook)
    used: int  # distinct codes that occur, of 2048
    entropy_bits: float  # of the code distribution, 0..11
    perplexity: float  # 2 ** entropy_bits


def usage(codes) -> list[CodebookUsage]:
    """Usage of every codebook in ``codes`` (frames, 16)."""
    counts = histograms(codes)
    rows = []
    for book, count in enumerate(counts, start=1):
        p = count[count > 0] / count.sum()
        entropy = float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0: no "-0.0" for a single code
        rows.append(CodebookUsage(book, int((count > 0).sum()), round(entropy, 3), round(2.0**entropy, 1)))
    return rows


def histograms(codes) -> np.ndarray:
    """Counts of each code in each codebook: (16, 2048) int64."""
    array = np.asarray(codes)
    if array.ndim != 2 or array.shape[1] != NUM_CODEBOOKS or array.shape[0] == 0:
        raise SettingsError(f"Codes must have shape (frames, {NUM_CODEBOOKS}); got {array.shape}.")
    offsets = np.arange(NUM_CODEBOOKS) * CODEBOOK_SIZE
    flat = (array.astype(np.int64) + offsets).reshape(-1)
    return np.bincount(flat, minlength=NUM_CODEBOOKS * CODEBOOK_SIZE).reshape(NUM_CODEBOOKS, CODEBOOK_SIZE)


def check_codebook(codebook) -> int:
    """``codebook`` as an int in 1..16, or SettingsError."""
    try:
        value = int(codebook)
    except (TypeError, ValueError):
        value = 0
    if not 1 <= value <= NUM_CODEBOOKS:
        raise SettingsError(f"Codebook {codebook!r} does not exist; choose 1 to {NUM_CODEBOOKS}.")
    return value


USAGE_WORDS = {  # the figure's titles and axes in English; the web page passes its reader's
    "codebook_axis": "codebook (1 semantic, 2-16 acoustic); numbers: codes used of 2048",
    "entropy": "entropy (bits)",
    "title": "Token usage over {frames} frames",
    "code_id": "code id",
    "frames": "frames",
    "codebook_title": "Codebook {codebook}: {used} of {size} codes used, {bits} bits, perplexity {perplexity}",
}


def usage_figure(codes, codebook: int = 1, words: dict | None = None) -> Figure:
    """Entropy of every codebook (bars, of 11 bits) above the histogram of ``codebook`` (``words``:
    USAGE_WORDS in the reader's language)."""
    w = USAGE_WORDS | (words or {})
    codebook = check_codebook(codebook)
    rows = usage(codes)
    counts = histograms(codes)[codebook - 1]
    fig = Figure(figsize=(FIG_WIDTH_IN, 5.2), dpi=FIG_DPI)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": (1, 1), "hspace": 0.55})
    books = [r.codebook for r in rows]
    colours = ["#d9822b" if b == codebook else "#4c72b0" for b in books]
    top.bar(books, [r.entropy_bits for r in rows], color=colours)
    top.axhline(MAX_ENTROPY_BITS, color="#888", linewidth=0.8, linestyle="--")
    for r in rows:
        top.annotate(str(r.used), (r.codebook, r.entropy_bits), ha="center", va="bottom", fontsize=7)
    top.set_xticks(books)
    top.set_ylim(0, MAX_ENTROPY_BITS + 1.2)
    top.set_xlabel(w["codebook_axis"])
    top.set_ylabel(w["entropy"])
    top.set_title(w["title"].format(frames=np.asarray(codes).shape[0]))
    bottom.bar(np.arange(CODEBOOK_SIZE), counts, width=1.0, color="#d9822b")
    bottom.set_xlim(-0.5, CODEBOOK_SIZE - 0.5)
    bottom.set_xlabel(w["code_id"])
    bottom.set_ylabel(w["frames"])
    row = rows[codebook - 1]
    bottom.set_title(
        w["codebook_title"].format(
            codebook=codebook,
            used=row.used,
            size=CODEBOOK_SIZE,
            bits=f"{row.entropy_bits:.2f}",
            perplexity=f"{row.perplexity:g}",
        )
    )
    fig.subplots_adjust(left=0.07, right=0.98, top=0.93, bottom=0.1)
    return fig


def agreement(a, b) -> list[float]:
    """Per codebook, the share of frames where two encodes of one clip chose the same code (two
    checkpoints, or one at two precisions): 16 values in 0..1, over the frames both have."""
    x, y = np.asarray(a), np.asarray(b)
    n = min(x.shape[0], y.shape[0])
    if n == 0:
        return [0.0] * NUM_CODEBOOKS
    return [float(v) for v in (x[:n] == y[:n]).mean(axis=0)]
