"""core/codec.py: the facts agree with each other, and one rule decides which codes and lengths are valid."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from core import codec
from core.errors import TokenFileError


def test_facts_agree_with_each_other():
    assert codec.FRAME_RATE == codec.SAMPLE_RATE / codec.SAMPLES_PER_FRAME == 12.5
    assert codec.SAMPLES_PER_FRAME == 2 * codec.SAMPLES_PER_STEP  # two transformer steps per frame
    assert 2**codec.BITS_PER_CODE == codec.CODEBOOK_SIZE


@pytest.mark.parametrize("a, b", [(0, 7), (1, 7), (7, 7), (8, 7), (10**30 + 1, 3)])
def test_ceil_div_is_exact(a, b):
    assert codec.ceil_div(a, b) == math.ceil(Fraction(a, b))  # exact where float division is not (10**30)


def test_num_frames_counts_the_padded_last_frame():
    assert [codec.num_frames(n) for n in (1, 1920, 1921, 3840)] == [1, 1, 2, 2]


@pytest.mark.parametrize("original", [1920.0, True, "1920", -1, 1920, 3841])
def test_check_codes_refuses_lengths_that_are_not_whole_or_do_not_fit(original):
    # the engine used to accept 1920.0 while the token file reader refused it: now one rule
    with pytest.raises(TokenFileError, match="original_samples"):
        codec.check_codes(np.zeros((2, 16), np.int16), original)


def test_check_codes_returns_int64_and_accepts_every_fitting_length():
    codes = np.full((2, 16), 2047, np.int16)
    for original in (1921, 3840, np.int64(2000)):
        checked = codec.check_codes(codes, original)
        assert checked.dtype == np.int64 and np.array_equal(checked, codes)
