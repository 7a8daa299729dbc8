"""CSV cells that would start a spreadsheet formula are written as text, by every CSV writer of the
code (``core.csv_cells``). Before, a nickname ``=cmd|' /C calc'!A0`` reached the owner's CSV and
``listening-export`` as it was, and a file name ``=HYPERLINK(...)`` ``evaluate``'s ``metrics.csv``."""

from __future__ import annotations

import ast
import csv
import io
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from core import csv_cells
from core.listening import shared_test_db
from core.listening.shared_test_store import SharedTestStore

ROOT = Path(__file__).resolve().parents[2]
ATTACK = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("text", [ATTACK, "+1+cmd", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "-", "=", "\t-1"])
def test_formula_like_text_is_written_as_text(text):
    out = io.StringIO()
    csv_cells.writer(out).writerow([text, 1.5])
    ((cell, number),) = csv.reader(io.StringIO(out.getvalue()))
    assert cell == "'" + text and number == "1.5"


@pytest.mark.parametrize("value", ["-3.2", "+1", "-inf", "nan", "ann", "", -3.2, 7, None, "a=b"])
def test_numbers_and_plain_text_are_left_alone(value):
    assert csv_cells.cell(value) == value


def test_no_csv_writer_outside_csv_cells():
    """``csv.writer`` / ``csv.DictWriter`` anywhere in the code but ``core/csv_cells.py`` would skip the rule."""
    found = []
    for folder in ("core", "webui", "bench", "scripts", "deploy"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "core" / "csv_cells.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter"):
                    if isinstance(node.value, ast.Name) and node.value.id == "csv":
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if isinstance(node, ast.ImportFrom) and node.module == "csv":
                    if {a.name for a in node.names} & {"writer", "DictWriter"}:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"write CSV through core.csv_cells: {found}"


def test_a_nickname_cannot_plant_a_formula_in_the_listening_export(tmp_path, cli):
    store = SharedTestStore(shared_test_db.Database(tmp_path / "data"))
    plan = {"a_source": "original", "b_source": "k2", "trials": 2}
    link, _ = store.create("abx", "sha", plan, {})
    key, _ = store.join(link, ATTACK)
    store.answer_abx(link, key, 0, "A")
    out = tmp_path / "all.csv"
    assert cli("listening-export", "-o", out, "--data-dir", tmp_path / "data").returncode == 0
    (row,) = csv.DictReader(out.open(encoding="utf-8"))
    assert row["nickname"] == "'" + ATTACK


def test_a_file_name_cannot_plant_a_formula_in_metrics_csv(tiny_engine, tmp_path, speech):
    from core.judging.evaluate import evaluate_files

    clip = tmp_path / "=HYPERLINK(1).wav"
    sf.write(clip, speech(0.4), 24_000, subtype="PCM_16")
    out = tmp_path / "out"
    evaluate_files(tiny_engine, [(clip, clip.name)], out, tiny_engine.settings.audio_limits())
    (row,) = csv.DictReader((out / "metrics.csv").open(encoding="utf-8"))
    assert row["file"] == "'=HYPERLINK(1).wav"
    assert np.isfinite(float(row["duration_s"]))  # numbers stay numbers
