"""Folder evaluation: round-trip every audio file under a folder and say how each one fared.

``python -m core evaluate DIR -o OUT`` writes, into OUT:

- ``metrics.csv``: one row per file, written as soon as that file is done (a crash or Ctrl-C keeps
  every finished row): metrics, DistillMOS of both, verdict, duration, timings, the reconstruction's
  file, or the error for a file that could not be evaluated (a bad file never stops the run);
- ``reconstructions/``: every reconstruction as a 24 kHz WAV, under a name of its own (names that
  differ only in characters a file name cannot keep get a numbered suffix);
- ``report.html``: summary statistics, distribution plots (embedded) and the worst files as a
  listening queue (their original and reconstruction are copied next to it under ``listen/``).

With ``--anchors`` (the reference codecs; ``none`` for the codec alone) or ``--compare-model``, each
row also has per-source columns and the report a per-source summary (``core.judging.per_source``).

Any file name works: a name that is not valid UTF-8 is shown with its odd bytes escaped
(``a\\xffb.wav``). The output folder may not lie inside the folder being evaluated (a rerun would
take the outputs for inputs). The web UI's "Evaluate files" tab calls :func:`evaluate_files` on
uploaded files.
"""

from __future__ import annotations

import html
import logging
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core import csv_cells
from core.analysis import catalog, metrics
from core.analysis.judges import Judges
from core.anchors import parse_anchors
from core.audio.files import load_audio
from core.audio.readers import AUDIO_SUFFIXES  # the one list of what the readers open
from core.errors import CodecError
from core.judging import averages, paper_table, per_source, report, sources, verdict
from core.judging.evaluate_file import COLUMNS, METRICS, display_name, evaluate_one
from core.judging.folder_files import scan_audio
from core.model import second
from core.names import safe_name
from core.settings import AudioLimits

logger = logging.getLogger(__name__)

PLOTTED = (*catalog.ids(m for m in catalog.COMPARED if m.plotted), "mos_drop")  # distributions drawn in the report
LISTED = catalog.ids(
    m for m in catalog.COMPARED if m.votes
)  # the metrics named beside each file in the listening queue
WORST_FILES = 5  # files in the report's listening queue
_LEVEL_RANK = {"red": 0, "amber": 1, "unknown": 2, "green": 3}


@dataclass(frozen=True)
class Evaluation:
    rows: list[dict]  # one per file, COLUMNS as keys
    csv_path: Path  # metrics.csv
    html_path: Path  # report.html
    seconds: float  # wall time of the whole run
    table: str | None = None  # --table: the README's layout for this folder (table.md), markdown


def _prepare(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("metrics.csv", "report.html", "reconstructions", "listen", "table.md"):
        if (out_dir / name).exists():
            raise CodecError(f"{out_dir / name} already exists; choose another output folder or remove it.")
    (out_dir / "reconstructions").mkdir()


def _unique(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem-2``, ``stem-3`` ... the first not in ``taken`` (which then holds it)."""
    candidate, n = stem, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(candidate.lower())
    return candidate


def evaluate_files(
    engine,
    files: Iterable[tuple[Path, str]],
    out_dir: Path,
    limits: AudioLimits,
    progress: Callable[[float, str], None] | None = None,
    worst: int = WORST_FILES,
    show_bar: bool = False,
    anchors=(),
    with_table: bool = False,
) -> Evaluation:
    """Evaluate ``(path, display name)`` pairs into ``out_dir`` (which must not hold earlier results);
    with ``anchors`` (core.anchors) or a second checkpoint loaded, per-source columns and summary."""
    from tqdm import tqdm

    started = time.perf_counter()
    out_dir = Path(out_dir)
    files = [(path, display_name(name)) for path, name in files]
    _prepare(out_dir)
    rows = []
    per_file: list[dict] = []  # --table: each file's measurements per source
    taken: set[str] = set()
    ids = per_source.source_ids(anchors, second.ready_second(engine) is not None)
    extra = per_source.columns(ids) if len(ids) > 1 else []
    from tqdm.contrib.logging import logging_redirect_tqdm

    csv_path = out_dir / "metrics.csv"
    with (
        open(csv_path, "x", newline="", encoding="utf-8") as table,
        logging_redirect_tqdm(),  # warnings about bad files print above the bar, not through it
        tqdm(files, unit="file", desc="evaluating", disable=not show_bar, dynamic_ncols=True) as bar,
    ):
        writer = csv_cells.dict_writer(table, fieldnames=[*COLUMNS, *extra])
        writer.writeheader()
        table.flush()
        for i, (path, name) in enumerate(bar):
            bar.set_postfix_str(name[-40:])
            if progress:
                progress(i / max(len(files), 1), f"{i + 1}/{len(files)}: {name}")
            stem = _unique(
                safe_name(str(Path(name).with_suffix("")), "audio"), taken
            )  # clip7.wav -> clip7, not clip7.wav.wav
            row = evaluate_one(engine, path, name, out_dir, limits, anchors, stem, per_file if with_table else None)
            rows.append(row)
            writer.writerow(row)
            table.flush()  # each row is on disk as soon as its file is done
    random_weights = engine.random_weights
    judges = Judges.of(engine.settings)
    table_md = _write_table(out_dir, per_file, anchors, random_weights, len(rows), judges) if with_table else None
    html_path = write_html(out_dir, rows, files, limits, worst, random_weights, ids if extra else [], table_md)
    return Evaluation(rows, csv_path, html_path, time.perf_counter() - started, table_md)


def _write_table(out_dir: Path, per_file: list[dict], anchors, random_weights: bool, files: int, judges) -> str:
    """table.md: the README's tokenizer table for this folder (core.judging.paper_table)."""
    labels: dict[str, tuple[str, float | None]] = {
        sources.CODEC_ID: ("Qwen3-TTS-Tokenizer-12Hz (this checkpoint)", sources.CODEC_BPS)
    }
    labels |= {a.id: (a.label, a.nominal_bps) for a in anchors}
    text = paper_table.markdown(paper_table.rows(per_file, labels, judges), random_weights, files, judges)
    with open(out_dir / "table.md", "x", encoding="utf-8") as f:
        f.write(text)
    return text


def _write_original(path: Path, samples) -> Path:
    """An original beside its reconstruction in listen/, by the one writer (the 16-bit grid)."""
    return sources.write_sources([sources.original(samples)], lambda _s: path)[sources.ORIGINAL_ID]


def worst_rows(rows: list[dict], n: int) -> list[dict]:
    """The n evaluated files a listener should hear first: worst light, then largest MOS drop,
    then lowest PESQ-WB."""
    done = [r for r in rows if not r["error"]]

    def key(r):
        return (_LEVEL_RANK.get(r["verdict"], 2), -(r["mos_drop"] or 0.0), r[catalog.PESQ_WB] or 5.0)

    return sorted(done, key=key)[:n]


def summary(rows: list[dict]) -> list[list]:
    """[column, n, mean, median, min, max, not available] for every numeric column with values; a value
    that is not available (None, NaN, infinite) is left out of the figures and counted in the last."""
    out = []
    evaluated = [r for r in rows if not r.get("error")]
    for name in (*METRICS, "mos_original", "mos_reconstruction", "mos_drop", "duration_s", "total_s"):
        col = averages.column(evaluated, name)
        if col.values:
            values = col.values
            out.append([name, len(values), col.mean, statistics.median(values), min(values), max(values), col.left_out])
    return out


def _histogram_png(rows: list[dict], path: Path) -> Path:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 2.6), dpi=metrics.FIG_DPI)
    axes = fig.subplots(1, len(PLOTTED))
    for ax, column in zip(axes, PLOTTED, strict=True):
        values = averages.column(rows, column).values
        ax.hist(values, bins=min(20, max(len(values), 1)), color="#4a7fb5")
        ax.set_title(column, fontsize=10)
        ax.tick_params(labelsize=8)
    axes[0].set_ylabel("files")
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.15, top=0.85, wspace=0.3)
    return metrics.figure_to_png(fig, path)


def write_html(
    out_dir: Path,
    rows: list[dict],
    sources: list[tuple[Path, str]],
    limits: AudioLimits,
    worst: int,
    random_weights: bool,
    source_ids: list[str] | None = None,
    table_md: str | None = None,
) -> Path:
    """report.html: counts, statistics, per-source summary, distributions, and the listening queue."""
    failed = [r for r in rows if r["error"]]
    levels = {level: sum(r["verdict"] == level for r in rows) for level in (*verdict.LEVELS, "unknown")}
    body = [
        f"<h1>Codec Workbench: evaluation of {len(rows)} files</h1>",
        f"<p>{len(rows) - len(failed)} evaluated, {len(failed)} could not be. Verdicts: "
        + ", ".join(f"{n} {html.escape(verdict.WORDS.get(k, k))}" for k, n in levels.items() if n)
        + ".</p>",
    ]
    if random_weights:
        body.append(f'<div class="caveat">{html.escape(verdict.RANDOM_CAVEAT)}</div>')
    body += [
        "<h2>Summary</h2>",
        report.table(summary(rows), ["column", "files", "mean", "median", "min", "max", "not available"]),
    ]
    if source_ids:
        header, per = per_source.summary(rows, source_ids)
        body += [
            "<h2>Per source</h2><p class='small'>Every source measured the same way on each file (PESQ, STOI and "
            "DistillMOS on the first seconds); the last columns count the files on which the codec was closer to the "
            "original than that source on every metric, further on every one, or mixed.</p>",
            report.table(per, header),
        ]
    if table_md:
        body += ["<h2>The paper's table on these files</h2>", f"<pre>{html.escape(table_md)}</pre>"]
    if len(rows) > len(failed):
        png = _histogram_png(rows, out_dir / "distributions.png")
        body += ["<h2>Distributions</h2>", report.image_tag(png, "distributions")]
    source_of = {id(row): path for row, (path, _name) in zip(rows, sources, strict=True)}
    queue = worst_rows(rows, worst)
    if queue:
        (out_dir / "listen").mkdir()
        body.append("<h2>Listen to these first (worst first)</h2>")
    for i, row in enumerate(queue, 1):
        rec = row["reconstruction"]
        stem = Path(rec).stem
        named = out_dir / "listen" / f"{i:02d}_{stem}_original.wav"
        original = _write_original(named, load_audio(source_of[id(row)], limits).samples)
        heard = out_dir / "listen" / f"{i:02d}_{stem}_reconstruction.wav"  # both of the pair in listen/
        shutil.copyfile(out_dir / rec, heard)
        rec = os.path.relpath(heard, out_dir)
        body.append(
            f"<h3>{i}. {html.escape(row['file'])}: {html.escape(verdict.WORDS.get(row['verdict'], '?'))}</h3>"
            "<p class='small'>"
            + "".join(f"{html.escape(m)} {report.cell(row[m])}, " for m in LISTED)
            + f"MOS {report.cell(row['mos_original'])} → {report.cell(row['mos_reconstruction'])}</p>"
            "<div class='players'>"
            f"<figure><figcaption>original</figcaption><audio controls preload='none' "
            f"src='{html.escape(os.path.relpath(original, out_dir))}'></audio></figure>"
            f"<figure><figcaption>reconstruction</figcaption><audio controls preload='none' "
            f"src='{html.escape(rec)}'></audio></figure></div>"
        )
    if failed:
        body += [
            "<h2>Files that could not be evaluated</h2>",
            report.table([[r["file"], r["error"]] for r in failed], ["file", "error"]),
        ]
    path = out_dir / "report.html"
    with open(path, "x", encoding="utf-8") as f:
        f.write(report.page("Codec Workbench evaluation", "\n".join(body)))
    return path


def check_output_dir(directory: Path, out_dir: Path) -> None:
    """The output folder may not be the input folder or lie inside it: a rerun would evaluate the
    reconstructions and listening copies of the first run as inputs."""
    inside = Path(os.path.realpath(out_dir))
    source = Path(os.path.realpath(directory))
    if inside == source or inside.is_relative_to(source):
        raise CodecError(
            f"The output folder {out_dir} is inside the folder being evaluated ({directory}); a later run "
            "would take the results for inputs. Choose an output folder outside it."
        )


def cmd_evaluate(args, engine) -> int:
    """The CLI command: every audio file under args.directory into args.output_dir; exit 0."""
    check_output_dir(args.directory, args.output_dir)
    files, skipped = scan_audio(args.directory)
    for line in skipped:
        print(line, file=sys.stderr)
    if not files:
        raise CodecError(f"No audio files under {args.directory} (looked for {', '.join(AUDIO_SUFFIXES)}).")
    limits = engine.settings.audio_limits()
    pairs = [(p, p.relative_to(args.directory).as_posix()) for p in files]
    anchors = parse_anchors(engine.settings.anchors)
    with_table = bool(getattr(args, "table", False))
    result = evaluate_files(
        engine, pairs, args.output_dir, limits, worst=args.worst, show_bar=True, anchors=anchors, with_table=with_table
    )
    failed = sum(1 for r in result.rows if r["error"])
    print(
        f"{len(result.rows)} files ({failed} could not be evaluated) in {result.seconds:.1f} s -> "
        f"{result.csv_path}, {result.html_path}"
    )
    if result.table:
        print(result.table)
    return 0
