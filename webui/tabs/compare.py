"""The comparison, in the round trip: which known codecs to make beside the codec (and the second
checkpoint), and under the listening lab the one table of every source with where the codec stands
(``/compare_table``). The work is in ``webui.jobs.compare``; the words in ``webui.views.compare_view``.

The sources reach the other events through the round trip's details (``details["compare"]``) and
the player's manifest; a path that comes back from a client is believed only inside the request
folders (``webui.jobs.compare.checked_sources``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core import anchors as core_anchors
from core.analysis.judges import Judges
from core.judging import sources
from webui import i18n
from webui.common import TabHandlers, need_file, path_of, user_errors
from webui.jobs import compare as compare_jobs
from webui.jobs import results
from webui.queues import METRICS_GROUP
from webui.views import compare_view

logger = logging.getLogger(__name__)

MAX_SOURCES = 48  # sources a client may hand back (every anchor, ladder level and more)


def chosen(anchors, with_second, settings) -> list[str]:
    """What the round trip makes beside the codec: the ticked anchors (None: the server's
    --anchors) and ``compare`` for the second checkpoint."""
    ids = core_anchors.anchor_ids(settings.anchors if anchors is None else anchors)
    return ids + ([sources.COMPARE_ID] if with_second is None or with_second else [])


def sources_of(value) -> list[dict]:
    """The source dicts in what a client handed over: the player's manifest (JSON text or dict),
    the round trip's details (``compare.sources``) or a list of sources."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if isinstance(value, dict) and isinstance(value.get("compare"), dict):
        value = value["compare"]
    items = value.get("sources", []) if isinstance(value, dict) else value or []
    if not isinstance(items, list):
        return []
    skip = (sources.ORIGINAL, sources.CODEC, sources.RESIDUAL)
    return [
        s for s in items if isinstance(s, dict) and s.get("kind") not in skip and s.get("id") != sources.RESIDUAL_ID
    ]


def checked_sources(value, root: Path) -> list[dict]:
    """The sources a client handed back (source dicts, as :func:`sources_of` finds them), each kept
    only with the known fields and a path to a WAV inside ``root`` (the app's request folders);
    a TranslatedError for anything else."""
    items = sources_of(value) if not isinstance(value, list) else value
    if len(items) > MAX_SOURCES:
        raise i18n.TranslatedError("compare.error.too_many", max=MAX_SOURCES)
    base = Path(root).resolve()
    out = []
    for item in items:
        where = item.get(compare_jobs.WAV, item.get("path")) if isinstance(item, dict) else None  # manifests: path
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(where, str):
            raise i18n.TranslatedError("compare.error.shape")
        path = Path(where).resolve()
        if not path.is_relative_to(base) or path.suffix.lower() != ".wav":
            raise i18n.TranslatedError("compare.error.not_ours", id=item["id"])
        if not path.is_file():
            raise i18n.TranslatedError("compare.error.gone", id=item["id"])
        bitrate = item.get("bitrate_bps")
        out.append(
            {
                "id": item["id"],
                compare_jobs.WAV: str(path),
                "label": str(item.get("name") or item.get("label") or item["id"])[:80],  # a manifest's "name"
                "kind": str(item.get("kind") or sources.ANCHOR),
                "key": str(item.get("key") or "")[:1],
                "bitrate_bps": float(bitrate) if isinstance(bitrate, int | float) else None,
            }
        )
    return out


@dataclass
class CompareHandlers(TabHandlers):
    """The table of every source."""

    def table(self, original_path, reconstruction_path, manifest, request: gr.Request | None = None, details=None):
        """Every source against the original: a column each (the fast metrics first, then DistillMOS),
        and where the codec stands among them. A generator: the page shows the first table at once."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        random_weights = self.engine.random_weights
        with user_errors("action.compare_table", lang):
            listed = checked_sources(manifest, self.workspace.root)
            codec = sources.codec().facts() | {compare_jobs.WAV: str(reconstruction)}
            items = [codec, *listed]
            for mos in (False, True):
                out = compare_jobs.table_of(
                    original,
                    items,
                    self.limits,
                    self.engine.device,
                    random_weights,
                    mos=mos,
                    judges=Judges.of(self.engine.settings),
                )
                outputs = self._outputs(out, lang, pending=not mos)
                if mos:  # the report takes the server's table, never the client's (webui.jobs.results)
                    results.remember(
                        results.find(self.engine, details, original, reconstruction), "comparison", outputs[-1]
                    )
                yield outputs

    def _outputs(self, out: compare_jobs.TableOutput, lang: str, pending: bool):
        labels = {c["source"]["id"]: compare_view.source_label(c["source"], lang) for c in out.table["columns"]}
        details = {"table": out.table, "placing": out.placing, "seconds": out.seconds}
        return (
            compare_view.table_markdown(out.table, lang, mos_pending=pending),
            compare_view.placing_markdown(out.placing, lang, labels),
            details,
        )

    def add_anchors(self, original_path, reconstruction_path, anchors, details, request: gr.Request | None = None):
        """An anchor ticked (or unticked) once a result is on screen: the missing ones made from the
        round trip's original and added to its sources, the unticked ones dropped; nothing is
        encoded again (a tick acts at once, without a full re-run). The player's timeline and
        the table follow. Before a result, or with nothing to change, nothing happens.

        The change is what the page asked for against the result it showed (``details``), applied to
        the server's latest state of that result: two quick ticks send two requests that may arrive in
        either order, each made from the same shown result; the later one must not undo the earlier."""
        lang = i18n.language_of(request)
        if not details or not original_path or not reconstruction_path:
            return gr.skip()
        original = need_file(original_path, "what.original", lang)
        need_file(reconstruction_path, "what.reconstruction", lang)  # a result on screen: both clips
        record = results.find(self.engine, details, original, path_of(reconstruction_path))
        latest = results.recall(record, "roundtrip") or details
        with user_errors("action.compare_table", lang):
            shown = {s["id"] for s in checked_sources(details, self.workspace.root) if s["kind"] == sources.ANCHOR}
            wanted = core_anchors.anchor_ids(anchors or [])
            dropped = shown - set(wanted)
            have = checked_sources(latest, self.workspace.root)
            kept = [s for s in have if s["kind"] != sources.ANCHOR or s["id"] not in dropped]
            missing = [a for a in wanted if a not in shown and a not in {s["id"] for s in have}]
            logger.info(
                "anchors: ticked %s, shown %s, the result has %s", wanted, sorted(shown), [s["id"] for s in have]
            )
            if not missing and len(kept) == len(have):
                return gr.skip() if latest is details else latest  # a page behind the result catches up
            extra = compare_jobs.add_anchors(original, missing, self.workspace.new_dir("anchors"), self.limits)
        compare = dict((latest or {}).get("compare") or {})
        compare["sources"] = kept + extra.sources
        compare["problems"] = [p for p in compare.get("problems") or [] if p.get("id") not in missing] + extra.problems
        updated = dict(latest) | {"compare": compare}
        results.remember(record, "roundtrip", updated)  # the report takes these, the next tick starts from them
        return updated

    def problems(self, details, request: gr.Request | None = None):
        """The anchors that could not be made, and the two checkpoints' codes (from the round trip's details)."""
        lang = i18n.language_of(request)
        compare = (details or {}).get("compare") or {}
        duration = ((details or {}).get("input") or {}).get("duration_s")
        return (
            compare_view.problems_markdown(compare.get("problems") or [], lang, duration),
            compare_view.agreement_markdown(compare.get("agreement") or [], lang),
        )


def inputs(settings) -> tuple[gr.CheckboxGroup, gr.Checkbox]:
    """The round trip's choice of what to make beside the codec (call in its input column)."""
    anchors = gr.CheckboxGroup(  # short labels, the same in every language (the player's buttons are translated)
        [(sources.short_label(a.id), a.id) for a in core_anchors.ANCHORS],
        value=core_anchors.anchor_ids(settings.anchors),
        label=i18n.label("compare.anchors"),
        info=i18n.label("compare.anchors_info"),
        elem_id="roundtrip-anchors",
    )
    second = gr.Checkbox(True, label=i18n.label("compare.second"), elem_id="roundtrip-second")
    return anchors, second


def build(
    handlers: CompareHandlers, timeline_done, ladder_done, original, reconstruction, player, details, more=()
) -> gr.JSON:
    """The table under the player, refreshed after the timeline and after each ladder (call in the lab);
    returns the JSON component holding the table (the report takes it)."""
    problems = gr.Markdown(elem_id="lab-compare-problems")
    table = gr.Markdown(elem_id="lab-compare-table", elem_classes="cw-tables")  # scrolls sideways on a phone
    placing = gr.Markdown(elem_id="lab-placing")
    agreement = gr.Markdown(elem_id="lab-agreement", elem_classes="cw-tables")
    raw = gr.JSON(visible=False)
    timeline_done.success(
        handlers.problems,
        inputs=[details],
        outputs=[problems, agreement],
        api_name="compare_notes",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    after = [(timeline_done, "compare_table"), (ladder_done, "compare_table_after_ladder")]
    after += [(event, f"compare_table_again_{n}") for n, event in enumerate(more)]  # sources added on a result
    for done, name in after:
        done.success(
            handlers.table,
            inputs=[original, reconstruction, player, details],
            outputs=[table, placing, raw],
            api_name=name,
            api_visibility="public" if name == "compare_table" else "private",
            trigger_mode="always_last",  # a table asked for while the last one is made follows it, never skipped
            **METRICS_GROUP,
        )
    return raw
