"""What a doctor check returns, and the report of a whole run (text and JSON).

A check is a pure function of the facts it is given (command output, sizes, tensors); it
returns a :class:`Finding` and never raises. ``gather.py`` collects the facts on this machine. Its
evidence and fix are sentences as data (``core.doctor.words``): English here and on the command line,
the reader's language on the page.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from core.doctor.words import Said

Text = Said | tuple[Said, ...] | str  # a sentence, sentences said one after another ("; "), or plain text

PASS, WARN, FAIL, SKIPPED = "pass", "warn", "fail", "skipped"
STATUSES = (PASS, WARN, FAIL, SKIPPED)  # only FAIL makes the exit code non-zero
SCHEMA_VERSION = 1  # bumped when a key of the JSON report changes meaning or goes away
_MARKS = {PASS: "ok", WARN: "WARN", FAIL: "FAIL", SKIPPED: "skip"}


@dataclass(frozen=True)
class Finding:
    name: str  # stable identifier, e.g. "model" (JSON key; also the catalogue key doctor.check.<name>)
    title: str  # what was checked, in words (English)
    status: str  # one of STATUSES
    evidence: str  # what was seen: versions, numbers, the offending path or tensor
    fix: str = ""  # one line saying what to do; empty when status is pass
    data: dict = field(default_factory=dict)  # the facts behind the evidence, for --json (no "path" keys:
    # Gradio's client takes any {"path": ...} object in a JSON output for a file to download)
    said: dict = field(default_factory=dict)  # {"evidence": [...], "fix": [...]}: the sentences as codes and fields


def finding(
    name: str, title: str, status: str, evidence: Text, fix: Text = "", facts: dict | None = None, **data: Any
) -> Finding:
    """A Finding; ``facts`` and keyword ``data`` together become its data (the fix is dropped on pass)."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}; got {status!r}")
    fix = "" if status == PASS else fix
    said = {
        key: [s.to_dict() for s in _sentences(text)] for key, text in (("evidence", evidence), ("fix", fix)) if text
    }
    if any(isinstance(text, str) and text for text in (evidence, fix)):
        said = {}  # plain text somewhere: the page says the English
    return Finding(name, title, status, english(evidence), english(fix), {**(facts or {}), **data}, said)


def english(text: Text) -> str:
    """The English of a finding's evidence or fix."""
    if isinstance(text, str):
        return text
    return "; ".join(s.english() for s in _sentences(text))


def _sentences(text: Text) -> tuple[Said, ...]:
    if isinstance(text, str):
        return ()
    return (text,) if isinstance(text, Said) else tuple(text)


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]  # in the order the checks ran
    seconds: float = 0.0  # wall time of the whole run

    @property
    def ok(self) -> bool:
        """True when nothing failed (warnings and skipped checks do not fail)."""
        return all(f.status != FAIL for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def counts(self) -> dict[str, int]:
        return {status: sum(f.status == status for f in self.findings) for status in STATUSES}

    def to_dict(self) -> dict:
        """The ``--json`` document (keys documented in docs/doctor.md; stable within SCHEMA_VERSION)."""
        return {
            "schema": SCHEMA_VERSION,
            "ok": self.ok,
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "checks": [asdict(f) for f in self.findings],
        }

    def to_text(self) -> str:
        """One line per check (status, title, evidence), the fix indented below; then the verdict."""
        width = max((len(f.title) for f in self.findings), default=0)
        lines = []
        for f in self.findings:
            lines.append(f"[{_MARKS[f.status]:>4}] {f.title:<{width}}  {f.evidence}")
            if f.fix:
                lines.append(f"{'':7}{'':<{width}}  fix: {f.fix}")
        c = self.counts()
        verdict = "nothing failed" if self.ok else f"{c[FAIL]} check(s) failed"
        lines.append(
            f"\n{verdict}: {c[PASS]} passed, {c[WARN]} warnings, {c[FAIL]} failed, "
            f"{c[SKIPPED]} skipped ({self.seconds:.1f} s)"
        )
        return "\n".join(lines)
