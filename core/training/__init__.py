"""Decoder fine-tuning (``python -m core finetune``; docs/training.md): the library call
:func:`finetune`, its settings :class:`FinetuneSettings` and the plan made before a run,
:func:`plan_finetune`. Gradio-free; the web page runs it in its own process."""

from core.training.preflight import plan_finetune
from core.training.settings import FinetuneSettings
from core.training.train import finetune

__all__ = ["FinetuneSettings", "finetune", "plan_finetune"]
