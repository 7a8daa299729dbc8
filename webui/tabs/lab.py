"""The listening lab, a section of the round trip: an A/B/R flip player (webui/static/player_*.js and
flip_player.js), the quality timeline with its worst moments, the codebook ladder and token usage.

``build_player`` and ``build_details`` place its parts, ``wire`` chains its events after the round
trip's own (whose outputs it only reads). The player's manifest lives in a ``gr.State`` (not part of the API)
and in the player's value; the API names are ``/timeline``, ``/ladder`` and ``/token_usage``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.codec import NUM_CODEBOOKS
from core.judging.sources import ANCHOR, CHECKPOINT, LEVEL
from core.nn import ladder
from webui import i18n
from webui.common import TabHandlers, need_file, refusal, user_errors
from webui.jobs import lab as lab_jobs
from webui.jobs import lab_ladder
from webui.queues import LAB_GROUP, MODEL_GROUP
from webui.tabs import compare
from webui.views import compare_view, figure_words, ladder_view
from webui.views.player_assets import player_css, player_js

logger = logging.getLogger(__name__)

JS_TEXT_KEYS = (  # the player's words (lab.player.*), in the page's language
    "play",
    "pause",
    "loop",
    "worst",
    "no_worst",
    "too_short",
    "legend_mel",
    "legend_snr",
    "zoom_in",
    "zoom_out",
    "zoom_all",
    "sources",
    "alt_wave",
    "alt_timeline",
    "alt_loop",
)


@dataclass
class LabHandlers(TabHandlers):
    """The lab's event handlers."""

    def timeline_again(self, original_path, reconstruction_path, details, manifest, request: gr.Request | None = None):
        """The timeline once the sources beside the codec changed (an anchor ticked on a result),
        keeping the ladder levels the player has (``manifest``: its state)."""
        return self.timeline(original_path, reconstruction_path, request, details, before=manifest)

    def timeline(
        self, original_path, reconstruction_path, request: gr.Request | None = None, details=None, before=None
    ):
        """Residual, loudness gains and the quality timeline of a reconstruction: the player's manifest;
        with the round trip's ``details``, its other sources too (anchors, the second checkpoint);
        with ``before`` (the player's manifest), the ladder levels it has."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        with user_errors("action.lab_timeline", lang):
            extra = compare.checked_sources(details, self.workspace.root)
            out = lab_jobs.base_manifest(
                original,
                reconstruction,
                self.workspace.new_dir("lab"),
                self.limits,
                self.engine.settings.decode_chunk_frames,
                extra=extra,
            )
        manifest = _with_ui_text(lab_jobs.with_levels_of(out.manifest, before), lang)
        logger.info("timeline of %s: %.3f s", original.name, out.seconds)
        return manifest, json.dumps(manifest), out.timeline

    def first_look(self, original_path, reconstruction_path, details=None, request: gr.Request | None = None):
        """The player as soon as the reconstruction exists (original, reconstruction, the sources made
        beside them): a 10-minute clip plays long before its timeline and verdict."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        with user_errors("action.lab_timeline", lang):
            extra = compare.checked_sources(details, self.workspace.root)
            manifest = lab_jobs.first_manifest(original, reconstruction, self.limits, extra)
        manifest = _with_ui_text(manifest, lang)
        return manifest, json.dumps(manifest)

    def ladder(
        self,
        audio_path,
        token_files,
        levels,
        manifest,
        request: gr.Request | None = None,
        progress=gr.Progress(),  # noqa: B008 - Gradio's way to ask for a progress bar
    ):
        """Decode with the first k codebooks for each chosen level; adds the levels to the player."""
        lang = i18n.language_of(request)
        audio = need_file(audio_path, "what.audio", lang)
        token_path = _first_token_file(token_files, lang)
        with user_errors("action.lab_ladder", lang):
            out = lab_ladder.run_ladder(
                self.engine,
                audio,
                token_path,
                levels,
                self.workspace.new_dir("ladder"),
                self.limits,
                manifest,
                i18n.progress_in(lang, progress),
            )
        manifest = _with_ui_text(out.manifest, lang)
        logger.info("ladder of %s: model %.2f s, ours %.3f s", audio.name, out.timing["model_s"], out.timing["ui_s"])
        details = {"levels": out.rows, "timing": out.timing}
        figures = ladder_view.spectrograms_html(out.spectrograms, manifest["duration_s"], lang)
        return (manifest, json.dumps(manifest), figures, _ladder_markdown(out.rows, lang), details)

    def token_usage(self, token_files, codebook, request: gr.Request | None = None):
        """Codes used, entropy and perplexity per codebook, and one codebook's histogram."""
        lang = i18n.language_of(request)
        token_path = _first_token_file(token_files, lang)
        if token_path is None:
            raise refusal(i18n.text("lab.error.no_tokens", lang), lang)
        with user_errors("action.lab_usage", lang):
            rows, png = lab_ladder.usage_of(
                token_path,
                codebook,
                self.workspace.new_dir("usage"),
                self.limits.max_duration_s,
                figure_words.of(lang)["usage"],
            )
        return _usage_markdown(rows, lang), str(png), {"codebooks": rows}

    def token_usage_of_either(self, uploaded, round_trip_files, codebook, request: gr.Request | None = None):
        """Another codebook's histogram: of the uploaded token file if there is one, else the round trip's."""
        return self.token_usage(uploaded or round_trip_files, codebook, request)


def _first_token_file(value, lang: str) -> Path | None:
    """The first .npz among what Gradio handed over (a path, a FileData dict or a list of them)."""
    items = value if isinstance(value, list | tuple) else [value]
    for item in items:
        path = item.get("path") if isinstance(item, dict) else item
        if path and str(path).endswith(".npz"):
            if not Path(path).is_file():
                raise refusal(i18n.text("error.file_gone", lang, what=i18n.text("what.token_file", lang)), lang)
            return Path(path)
    return None


def _with_ui_text(manifest: dict, lang: str) -> dict:
    """The manifest with the player's words in ``lang``: its buttons and each source's label."""
    ui = {key: i18n.text(f"lab.player.{key}", lang) for key in JS_TEXT_KEYS}
    lufs = manifest.get("reference_lufs")
    if manifest.get("first_look"):
        ui["note"] = i18n.text("running.first_look", lang)
    elif lufs is None:  # too short or silent: "? LUFS" says nothing
        ui["note"] = i18n.text("running.no_loudness", lang)
    else:
        ui["note"] = i18n.text("lab.player.note", lang, lufs=f"{lufs:.1f}")
    ui["residual_of"] = i18n.text("compare.player.residual_of", lang, source="{source}")  # the player fills it in
    sources = []
    for source in manifest["sources"]:
        # "label" becomes the words on the button; "name" keeps what the label was made from (the second
        # checkpoint's folder), so a manifest that comes back is labelled from it, never from its own words
        name = source.get("name", source.get("label"))
        if source.get("kind") in (ANCHOR, CHECKPOINT, LEVEL) or source["id"].startswith("k"):
            label = compare_view.source_label(source | {"kind": source.get("kind") or LEVEL, "label": name}, lang)
        else:
            label = i18n.text(f"lab.source.{source['id']}", lang)
        sources.append(source | {"label": label, "name": name})
    return manifest | {"ui": ui, "sources": sources}


def _ladder_markdown(rows: list[dict], lang: str) -> str:
    def number(value, digits=1):
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [i18n.text("lab.ladder.table_header", lang), "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['codebooks']} | {r['bitrate_bps']:g} | {number(r['si_sdr_db'])} | "
            f"{number(r['mel_distance_db'], 2)} | {r['gain_db']:+.1f} | {r['decode_s']:.2f} |"
        )
    return "\n".join(lines) + "\n\n" + i18n.text("lab.ladder.note", lang)


def _usage_markdown(rows: list[dict], lang: str) -> str:
    lines = [i18n.text("lab.usage.table_header", lang), "|---:|---:|---:|---:|"]
    lines += [f"| {r['codebook']} | {r['used']} | {r['entropy_bits']:.2f} | {r['perplexity']:g} |" for r in rows]
    return "\n".join(lines)


@dataclass
class LabParts:
    """The lab's components, placed in two parts of the round trip's page: the player and its
    ladder controls in the flow (``build_player``), the ladder's and token usage's figures in the
    folded details (``build_details``)."""

    state: gr.State  # the player's manifest: sources, gains, timeline
    player: gr.HTML
    timeline_json: gr.JSON
    levels: gr.CheckboxGroup
    run_ladder: gr.Button
    ladder_table: gr.Markdown | None = None
    ladder_figures: gr.HTML | None = None
    ladder_json: gr.JSON | None = None
    usage: list | None = None  # table, figure, JSON
    usage_file: gr.File | None = None
    codebook: gr.Slider | None = None
    compare_section: gr.Column | None = None  # the table of every source (webui.tabs.compare)
    comparison: gr.JSON | None = None  # that table's data (the report takes it)


def build_player() -> LabParts:
    """The flip player and the ladder's controls (call in the round trip's result column)."""
    state = gr.State(None)
    player = gr.HTML(
        "",
        html_template='<div class="cw-lab-root"></div>',
        css_template=player_css(),
        js_on_load=player_js("flip_player.js"),
        elem_id="lab-player",
    )
    gr.Markdown(i18n.label("lab.heading"), elem_id="lab-heading", elem_classes="cw-hint")
    timeline_json = gr.JSON(visible=False)
    with gr.Accordion(i18n.label("lab.ladder.heading"), open=False, elem_id="lab-ladder"):
        with gr.Row():
            levels = gr.CheckboxGroup(
                [str(k) for k in range(1, NUM_CODEBOOKS + 1)],
                value=[str(k) for k in ladder.DEFAULT_LEVELS],
                label=i18n.label("lab.ladder.levels"),
                elem_id="lab-levels",
                scale=4,
            )
            run_ladder = gr.Button(i18n.label("lab.ladder.run"), elem_id="lab-ladder-run", scale=1)
    return LabParts(state, player, timeline_json, levels, run_ladder)


def build_details(parts: LabParts) -> None:
    """The table of every source, the ladder's table and spectrograms, and the token usage (call in
    the folded details)."""
    parts.compare_section = gr.Column(elem_id="lab-compare")
    parts.ladder_table = gr.Markdown(elem_id="lab-ladder-table")
    parts.ladder_figures = gr.HTML(elem_id="lab-ladder-gallery")
    parts.ladder_json = gr.JSON(visible=False)
    with gr.Accordion(i18n.label("lab.usage.heading"), open=False, elem_id="lab-usage"):
        with gr.Row():
            parts.usage_file = gr.File(
                label=i18n.label("lab.usage.upload"), file_types=[".npz"], elem_id="lab-usage-file"
            )
            parts.codebook = gr.Slider(
                1,
                NUM_CODEBOOKS,
                value=1,
                step=1,
                label=i18n.label("lab.usage.codebook"),
                elem_id="lab-usage-codebook",
            )
        usage_table = gr.Markdown(elem_id="lab-usage-table")
        usage_png = gr.Image(
            type="filepath", interactive=False, label=i18n.label("lab.usage.figure"), elem_id="lab-usage-figure"
        )
        parts.usage = [usage_table, usage_png, gr.JSON(visible=False)]


def wire(
    lab: LabHandlers,
    parts: LabParts,
    roundtrip_done,
    original,
    reconstruction,
    downloads,
    details,
    sources_changed=None,
):
    """The lab's events, chained after ``roundtrip_done`` (the /roundtrip event); ``details``: the
    round trip's JSON, whose ``compare`` part lists the other sources. ``sources_changed``: an event
    after which those sources changed (an anchor ticked on a result): the timeline and the table
    again. Returns the /timeline event (the blind test's choices follow it)."""
    assert parts.usage is not None and parts.usage_file is not None and parts.codebook is not None
    assert parts.ladder_figures is not None and parts.ladder_table is not None and parts.ladder_json is not None
    assert parts.compare_section is not None
    first_look = roundtrip_done.success(
        lab.first_look,
        inputs=[original, reconstruction, details],
        outputs=[parts.state, parts.player],
        api_name="lab_first_look",
        api_visibility="private",
        queue=False,  # no queue: it reads files and draws waveforms; the timeline, in the lab's queue, follows it
        show_progress="hidden",
    )
    timeline_done = first_look.success(
        lab.timeline,
        inputs=[original, reconstruction, details],
        outputs=[parts.state, parts.player, parts.timeline_json],
        api_name="timeline",
        show_progress="hidden",  # the player plays meanwhile (its first look): an overlay would block it
        **LAB_GROUP,
    )
    again = []
    if sources_changed is not None:
        again.append(
            sources_changed.success(
                lab.timeline_again,
                inputs=[original, reconstruction, details, parts.state],
                outputs=[parts.state, parts.player, parts.timeline_json],
                api_name="timeline_again",
                api_visibility="private",
                show_progress="hidden",
                trigger_mode="always_last",  # two quick ticks: the second's timeline follows the first's, never skipped
                **LAB_GROUP,
            )
        )
    roundtrip_done.success(
        lab.token_usage, inputs=[downloads, parts.codebook], outputs=parts.usage, api_name="token_usage", **LAB_GROUP
    )
    parts.usage_file.upload(
        lab.token_usage,
        inputs=[parts.usage_file, parts.codebook],
        outputs=parts.usage,
        api_name="token_usage_upload",
        api_visibility="private",
        **LAB_GROUP,
    )
    parts.codebook.change(  # a drag's release and the arrow keys alike (.release misses the keys)
        lab.token_usage_of_either,
        inputs=[parts.usage_file, downloads, parts.codebook],
        outputs=parts.usage,
        api_name="token_usage_codebook",
        api_visibility="private",
        trigger_mode="always_last",  # a drag over many codebooks draws the last one, not each on the way
        **LAB_GROUP,
    )
    ladder_done = parts.run_ladder.click(
        lab.ladder,
        inputs=[original, downloads, parts.levels, parts.state],
        outputs=[parts.state, parts.player, parts.ladder_figures, parts.ladder_table, parts.ladder_json],
        api_name="ladder",
        **MODEL_GROUP,
    )
    with parts.compare_section:
        parts.comparison = compare.build(
            compare.CompareHandlers(lab.engine, lab.workspace),
            timeline_done,
            ladder_done,
            original,
            reconstruction,
            parts.player,
            details,
            again,
        )
    return timeline_done
