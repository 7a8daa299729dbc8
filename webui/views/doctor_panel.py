"""The System tab's *Diagnose* panel: a core/doctor report as an HTML table in the page's
language. Titles, status words, the verdict and each check's evidence and fix are in the reader's
language: the report carries them as codes and fields (``core.doctor.words``), said here from the
catalogue (``doctor.note.<code>``). What a system said (an error message, a state), commands and
names stay as they are, set as code."""

from __future__ import annotations

import html
import re

from core import notes
from core.doctor import DoctorOptions
from core.doctor.words import ENGLISH
from webui.i18n import DEFAULT_LANGUAGE, catalogues, text

ICONS = {"pass": "✓", "warn": "!", "fail": "✗", "skipped": "–"}  # doctor status -> icon
_BACKTICKS = re.compile(r"`([^`]+)`")
# fields that hold what a system or a model said, or lists of names: shown as code, in any language
AS_IS = frozenset(
    {
        "cpu",
        "error",
        "problem",
        "text",
        "reason",
        "why",
        "state",
        "status",
        "listed",
        "label",
        "chosen",
        "names",
        "decoders",
        "missing",
        "shown",
        "arch",
    }
)
SEPARATOR = {"zh-CN": "；"}  # between two sentences of one finding; "; " otherwise


def options_for(address: tuple[str | None, int | None], temp_root) -> DoctorOptions:
    """Doctor options for this server: the host and port it was started on (checked as "ours") and
    the temp folder its request folders go to. Never from the request: its Host header is the
    client's to choose (a forged one made the server probe other ports, a port scanner)."""
    host, port = address
    changes: dict = {"temp_dir": temp_root}
    if port:
        changes.update(host=host or DoctorOptions.host, port=int(port))
    return DoctorOptions(**changes)


def panel_html(report: dict, lang: str = DEFAULT_LANGUAGE) -> str:
    """``Report.to_dict()`` as the panel: verdict, summary, one row per check."""
    counts = report["counts"]
    verdict = text("doctor.ok", lang) if report["ok"] else text("doctor.failed", lang, failed=counts["fail"])
    summary = text(
        "doctor.summary",
        lang,
        passed=counts["pass"],
        warned=counts["warn"],
        failed=counts["fail"],
        skipped=counts["skipped"],
        seconds=f"{report['seconds']:.1f}",
    )
    head = "".join(f"<th>{_esc(text(f'doctor.col.{c}', lang))}</th>" for c in ("check", "status", "evidence"))
    words = _words(lang)
    rows = "".join(_row(check, lang, words) for check in report["checks"])
    return (
        f'<div class="cw-status cw-{"ok" if report["ok"] else "bad"}" id="doctor-report">'
        f'<div class="cw-verdict">{_esc(verdict)}</div><div class="cw-hint">{_esc(summary)} · '
        f"{_code(text('doctor.english_note', lang))}</div>"
        f'<table class="cw-doctor"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'
    )


def _words(lang: str) -> dict[str, str]:
    """{code: sentence} of every doctor sentence in ``lang`` (English where a catalogue lacks one)."""
    table = catalogues().get(lang) or catalogues()[DEFAULT_LANGUAGE]
    return {code: table.get(f"doctor.note.{code}", english) for code, english in ENGLISH.items()}


def _row(check: dict, lang: str, words: dict[str, str]) -> str:
    status = check["status"]
    key = f"doctor.check.{check['name']}"
    title = text(key, lang) if key in catalogues()[DEFAULT_LANGUAGE] else check["title"]
    box = "cw-fix" if status in ("fail", "warn") else "cw-hint"  # a skipped check's fix is advice, not alarm
    fix = (
        f'<div class="{box}"><b>{_esc(text("doctor.col.fix", lang))}:</b> {_code(_said(check, "fix", lang, words))}</div>'
        if check["fix"]
        else ""
    )
    return (
        f'<tr class="cw-step-{_esc(status)}" data-check="{_esc(check["name"])}">'
        f"<td><b>{_esc(title)}</b></td>"
        f'<td><span class="cw-icon">{ICONS.get(status, "?")}</span> '
        f'<span class="cw-word">{_esc(text("status.word." + status, lang))}</span></td>'
        f'<td><span class="cw-detail">{_code(_said(check, "evidence", lang, words))}</span>{fix}</td></tr>'
    )


def _said(check: dict, part: str, lang: str, words: dict[str, str]) -> str:
    """A finding's evidence or fix in ``lang`` (its codes said from ``words``), or its English text when
    it came as plain text."""
    sentences = (check.get("said") or {}).get(part)
    if not sentences:
        return check[part]
    said = []
    for s in sentences:
        fields = {k: f"`{v}`" if k in AS_IS and v not in (None, "") else v for k, v in s["fields"].items()}
        said.append(notes.say(s["code"], fields, words))
    return SEPARATOR.get(lang, "; ").join(said)


def _esc(value) -> str:
    return html.escape(str(value))


def _code(value) -> str:
    return _BACKTICKS.sub(r"<code>\1</code>", _esc(value))
