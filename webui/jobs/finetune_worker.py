"""``python -m webui.jobs.finetune_worker FIELDS_JSON``: one fine-tuning run the page started, in a
process of its own (``webui.jobs.finetune_runs`` starts it). It calls the library
(``core.training.finetune``) with a stop event that SIGTERM sets (the page's Stop) and that is set
too when the web process that started it is gone, so the run ends cleanly after its current step
either way (checkpoint and exported model kept). A run that fails before the trainer writes its
``result.json`` gets one with the reason, so the page can say why.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

logger = logging.getLogger("webui.jobs.finetune_worker")

PARENT_CHECK_S = 1.0  # how often the process looks whether the web process is still there


def _watch_parent(parent: int, stop: threading.Event) -> None:
    while not stop.wait(PARENT_CHECK_S):
        if os.getppid() != parent:
            logger.warning("the web process that started this run is gone: stopping after this step")
            stop.set()


def _write_failure(out: Path, error: BaseException) -> None:
    """``result.json`` saying why, unless the trainer wrote one (written beside, then renamed)."""
    target = out / "result.json"
    if target.exists():
        return
    text = str(error).strip() or type(error).__name__
    result = {"status": "failed", "steps": 0, "message": text, "model": None}
    partial = target.with_name(".result.json.part")
    partial.write_text(json.dumps(result), encoding="utf-8")
    os.replace(partial, target)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    fields = json.loads((argv if argv is not None else sys.argv[1:])[0])
    out = Path(fields["out"])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    threading.Thread(target=_watch_parent, args=(os.getppid(), stop), daemon=True).start()
    try:
        from core.training import finetune
        from webui.jobs.finetune import settings_of

        result = finetune(settings_of(fields), None, stop)
    except Exception as e:  # the page shows the reason; the log has the trace
        logger.exception("the fine-tuning run failed")
        _write_failure(out, e)
        return 1
    logger.info("the fine-tuning run ended: %s", getattr(result, "status", result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
