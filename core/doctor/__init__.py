"""``python -m core doctor``: one run of every check a support engineer would ask for, each with
status, evidence and a one-line fix (docs/doctor.md). Checks are pure functions of gathered facts
(``gpu``, ``host``, ``tones``); ``gather`` touches the machine; ``run`` ties them together."""

from core.doctor.findings import FAIL, PASS, SKIPPED, STATUSES, WARN, Finding, Report
from core.doctor.run import DoctorOptions, run_doctor

__all__ = ["FAIL", "PASS", "SKIPPED", "STATUSES", "WARN", "DoctorOptions", "Finding", "Report", "run_doctor"]
