"""The metric catalogue (core.analysis.catalog): every list of metrics reads it, the docs' table
matches it, compare() returns its rows in order, and a metric's name is a literal in one module."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from core.analysis import catalog
from core.analysis.judges import DEFAULT_JUDGES
from core.analysis.metrics import compare, quick_compare
from core.judging import evaluate, placing, source_table, verdict
from webui.views import verdict_card

ROOT = Path(__file__).resolve().parents[3]


def test_compare_returns_the_catalogue_rows_in_order(speech):
    x = speech(1.0)
    got = compare(x, 0.5 * x + 0.01 * np.random.default_rng(0).standard_normal(x.size).astype(np.float32))
    assert [m.name for m in got] == list(catalog.ids(DEFAULT_JUDGES.rows(catalog.COMPARED)))  # GE2E, no ASR
    for m in got:
        row = catalog.BY_ID[m.name]
        assert (m.better, m.unit, m.meaning) == (row.better, row.unit, row.meaning)
    assert [m.name for m in quick_compare(x, x)] == [r.id for r in catalog.COMPARED if r.quick]


def test_every_list_of_metrics_is_the_catalogues():
    assert verdict.THRESHOLDS == {m.id: (m.green, m.red, m.better == catalog.HIGHER) for m in catalog.VOTERS}
    assert verdict_card.SIGNALS == tuple(m.id for m in sorted(catalog.VOTERS, key=lambda m: m.card_rank))
    assert verdict_card.SHOWN == tuple(m.id for m in sorted(catalog.CARD, key=lambda m: m.card_rank))
    assert source_table.ROWS[:-1] == tuple(m.id for m in catalog.METRICS if m.source_table)
    assert placing.COMPARED == tuple(m.id for m in catalog.METRICS if m.places)
    assert evaluate.METRICS == tuple(m.id for m in catalog.COMPARED)
    assert set(evaluate.METRICS) <= set(evaluate.COLUMNS)
    for m in catalog.METRICS:
        if m.id in source_table.HIGHER_IS_BETTER:
            assert source_table.HIGHER_IS_BETTER[m.id] == m.higher_is_better


def test_every_row_is_whole():
    for m in catalog.METRICS:
        assert m.better in (catalog.HIGHER, catalog.LOWER) and m.reads in (catalog.PAIR, catalog.SINGLE, catalog.DROP)
        assert m.window in (catalog.FIRST, catalog.WHOLE, catalog.MOS_WINDOWS, catalog.SPREAD) and m.meaning and m.key
        assert (m.green is None) == (m.red is None)
        if m.votes:  # green is the better side of red
            assert (m.green >= m.red) if m.higher_is_better else (m.green <= m.red)
            assert m.card_rank >= 1
        assert m.card_rank == 0 or m.reads in (catalog.PAIR, catalog.DROP)  # the card's numbers hold no MOS alone
    assert len({m.id for m in catalog.METRICS}) == len(catalog.METRICS)
    assert len({m.key for m in catalog.METRICS}) == len(catalog.METRICS)
    assert sorted(m.card_rank for m in catalog.CARD) == list(range(1, len(catalog.CARD) + 1))
    assert catalog.VOTERS_ON_CARD == tuple(m for m in catalog.CARD if m.votes) and set(catalog.VOTERS_ON_CARD) == set(
        catalog.VOTERS
    )


def test_every_rows_compute_names_a_function():
    for m in catalog.METRICS:
        assert callable(m.function()), m.compute
    bare = catalog.BY_ID[catalog.STOI]
    assert bare.function() is __import__("core.analysis.signal_metrics", fromlist=["x"]).stoi


def test_the_docs_table_lists_the_catalogue():
    text = (ROOT / "docs" / "judging.md").read_text(encoding="utf-8")
    section = text[text.index("## The metrics (one catalogue)") : text.index("### Adding a metric")]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    assert rows[0] == "metric"
    assert rows[1:] == list(catalog.ids(catalog.METRICS))
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells and cells[0] in catalog.BY_ID:
            m = catalog.BY_ID[cells[0]]
            assert (cells[1], cells[2], cells[5]) == (m.better, m.unit, "yes" if m.votes else "no"), line


def _string_literals(path: Path) -> list[str]:
    """The string constants of a module that are not docstrings, once per place they stand."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_a_metric_id_is_a_literal_in_one_module_only():
    """Each id the catalogue names by a constant is written once: as its row's id. The constants come
    from the rows (found by locale key), never by looking a row up by its display text again."""
    constants = (catalog.PESQ_WB, catalog.PESQ_NB, catalog.STOI, catalog.MOS, catalog.MOS_DROP, catalog.SIM_GE2E)
    assert len(set(constants)) == len(constants) and set(constants) <= set(catalog.BY_ID)
    for metric_id in constants:
        holders = [
            str(p.relative_to(ROOT))
            for folder in ("core", "webui")
            for p in sorted((ROOT / folder).rglob("*.py"))
            for literal in _string_literals(p)
            if literal == metric_id
        ]
        assert holders == ["core/analysis/catalog.py"], (metric_id, holders)
