"""The progress box's numbers (webui.jobs.progress) on a clock the test moves: no time left before
anything is known, the decode's own pace once it has moved, the last job's pace for the next one."""

from __future__ import annotations

from webui.jobs.progress import ProgressBoard
from webui.views import progress_view


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _estimate(board: ProgressBoard, session: str) -> None:
    """The round trip's estimate line for a 64 s clip that fits in RAM (the job's 15% mark)."""
    board.note(
        session,
        0.15,
        "job.estimate.roundtrip",
        seconds="64.0",
        need="0.07",
        available="16",
        where_key="words.ram",
        fits_key="words.fits",
    )


def _started(first_pace=None) -> tuple[Clock, ProgressBoard]:
    """A board on a clock the test moves, with job "s" started and its estimate line in (64 s of audio)."""
    clock = Clock()
    board = ProgressBoard(clock, first_pace=first_pace)
    board.start("s")
    _estimate(board, "s")
    return clock, board


def test_time_left_comes_from_the_decode_pace_then_from_the_last_job():
    clock = Clock()
    board = ProgressBoard(clock)
    board.start("s")
    board.note("s", 0.05, "job.reading")
    _estimate(board, "s")
    board.note("s", 0.26, "job.encoding_part", percent="100%")
    clock.now += 2.0
    assert board.snapshot("s").left_s is None  # the encode's share of the bar is no clock
    board.note("s", 0.46, "job.decoding_part", percent="33%")
    left = board.snapshot("s").left_s
    assert left is not None and abs(left - (1 - 0.46) * 2.0 / 0.20) < 1e-6
    clock.now += 4.0
    board.finish("s", audio_s=64.0)
    assert board.snapshot("s").done and board.snapshot("s").elapsed_s == 6.0
    assert abs(board.pace_s_per_audio_s - 6.0 / 64.0) < 1e-9
    board.start("t")  # the next job, same length: the last pace until its own decode moves
    _estimate(board, "t")
    clock.now += 1.0
    assert abs(board.snapshot("t").left_s - 5.0) < 1e-6


def test_the_box_says_stage_share_time_and_estimate_in_both_languages():
    clock, board = _started()
    board.note("s", 0.30, "job.decoding_part", percent="10%")
    clock.now += 65
    snap = board.snapshot("s")
    en, zh = progress_view.running(snap, "en"), progress_view.running(snap, "zh-CN")
    assert "Decoding" in en and "30%" in en and "1:05 so far" in en and "64.0 s" in en
    assert "正在解码" in zh and "已用 1:05" in zh and "Decoding" not in zh
    assert "(10%)" not in en  # the stage's own share beside the job's read as a contradiction


def test_an_unknown_session_and_a_bounded_board():
    board = ProgressBoard()
    assert board.snapshot("nobody") is None
    for n in range(300):
        board.start(str(n))
    assert board.snapshot("0") is None and board.snapshot("299") is not None


def test_a_fresh_servers_first_job_gets_the_model_checks_pace_said_as_a_floor():
    clock = Clock()
    board = ProgressBoard(clock, first_pace=lambda: 0.5)  # the readiness round trip: 0.5 s a second of audio
    board.start("s")
    board.note("s", 0.05, "job.reading")
    assert board.snapshot("s").left_s is None  # the clip's length is not read yet
    _estimate(board, "s")  # 64 s of audio
    clock.now += 2.0
    snap = board.snapshot("s")
    assert snap.left_guessed and abs(snap.left_s - (0.5 * 64 - 2.0)) < 1e-6
    assert "at least 0:30 left" in progress_view.running(snap, "en")
    assert "至少剩 0:30" in progress_view.running(snap, "zh-CN")
    clock.now += 1.0
    board.finish("s", audio_s=64.0)  # a finished job's own pace replaces the guess
    board.start("t")
    _estimate(board, "t")
    assert not board.snapshot("t").left_guessed
    assert ProgressBoard(clock).snapshot("x") is None


def test_the_readiness_report_gives_the_model_pace_only_when_its_round_trip_passed():
    from core.model.readiness import ReadinessReport, Step

    passed = ReadinessReport((Step("roundtrip", "t", "pass", "", 0.3, {"seconds": 0.25, "input_s": 1.0}),), 0.0)
    failed = ReadinessReport((Step("roundtrip", "t", "fail", "", 0.3, {"seconds": 0.25, "input_s": 1.0}),), 0.0)
    assert passed.model_pace() == 0.25 and failed.model_pace() is None


def test_a_tick_before_the_jobs_first_stage_says_starting():
    """The click starts the session's job; the timer can tick before the job reports a stage."""
    board = ProgressBoard(Clock())
    board.start("s")
    assert "Starting" in progress_view.running(board.snapshot("s"), "en")  # was a KeyError: the tick failed
    assert "正在开始" in progress_view.running(board.snapshot("s"), "zh-CN")


def test_between_two_steps_the_time_left_counts_down_and_the_bar_moves_with_the_clock():
    """One model call on a CPU can take a minute: the box stood at "Encoding · 20 %" for 40 s, and while
    the decode waited for its next step the time left grew (1:47 to 3:24)."""
    clock, board = _started()
    board.note("s", 0.26, "job.encoding_part", percent="100%")
    clock.now += 10.0
    board.note("s", 0.36, "job.decoding_part", percent="13%")  # 0.10 of the job in 10 s
    first = board.snapshot("s").left_s
    assert abs(first - 64.0) < 1e-6
    clock.now += 20.0  # the next step is slow to come
    waiting = board.snapshot("s")
    assert abs(waiting.left_s - 44.0) < 1e-6  # counted down, not grown
    assert 0.36 < waiting.fraction <= 0.36 + 0.5 * 0.64  # the bar moved with the clock, at most half-way
    clock.now += 100.0
    assert board.snapshot("s").left_s == 1.0  # run out before the step came: "a moment", never negative
    later = board.snapshot("s").fraction
    board.note("s", 0.46, "job.decoding_part", percent="27%")  # the step, late: the pace is measured again
    assert board.snapshot("s").fraction >= later  # the bar never goes back
    assert board.snapshot("s").left_s > 1.0


def test_a_first_job_on_a_known_pace_moves_its_bar_during_the_encode():
    clock, board = _started(first_pace=lambda: 0.5)  # 64 s of audio: at least 32 s
    board.note("s", 0.20, "job.encoding", percent="0%")
    shown = [board.snapshot("s").fraction]
    for _ in range(3):
        clock.now += 5.0
        shown.append(board.snapshot("s").fraction)
    assert shown == sorted(shown) and shown[-1] > shown[0] + 0.1, shown  # 20 % for 14 s read as frozen
