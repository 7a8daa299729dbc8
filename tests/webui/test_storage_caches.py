"""Each process of the app keeps its own Gradio cache under the shared temp root
(``webui.serving.storage``): Gradio names a cached upload by its content's hash, and an app that
stops deletes every file it cached, so replicas sharing one cache folder deleted the sample clip
another replica's visitor had just uploaded (seen as a blind test's "no longer on the server")."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from webui.serving import storage

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
import os, sys
from pathlib import Path
from webui.serving import storage
storage.use_for_process(Path(sys.argv[1]))
print(os.environ["GRADIO_TEMP_DIR"])
"""


def _cache_of_a_new_process(root: Path) -> Path:
    out = subprocess.run(
        [sys.executable, "-c", SNIPPET, str(root)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    return Path(out.stdout.strip())


def test_two_processes_on_one_root_get_caches_of_their_own(tmp_path):
    first, second = _cache_of_a_new_process(tmp_path), _cache_of_a_new_process(tmp_path)
    assert first != second
    for cache in (first, second):
        assert cache.is_dir() and cache.parent == storage.gradio_dir(tmp_path)


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_sweep_takes_only_old_caches_of_processes_that_are_gone(tmp_path):
    max_age_s = 3600.0
    gone_old = storage.process_gradio_dir(tmp_path, _gone_pid())
    gone_new = storage.process_gradio_dir(tmp_path, 5_000_000)  # past Linux's PID_MAX_LIMIT: gone
    mine = storage.process_gradio_dir(tmp_path)
    stranger = storage.gradio_dir(tmp_path) / "not-a-cache"
    for folder in (gone_old, gone_new, mine, stranger):
        (folder / "ab12").mkdir(parents=True)
        (folder / "ab12" / "clip.wav").write_bytes(b"RIFF")
    old = time.time() - 2 * max_age_s
    for folder in (gone_old, mine, stranger):
        os.utime(folder, (old, old))
    assert storage.sweep_gradio(tmp_path, max_age_s) == 1
    assert not gone_old.exists()  # a stop that was not clean left it, and nobody touched it for long
    assert (gone_new / "ab12" / "clip.wav").exists()  # recent: may belong to a process of another namespace
    assert (mine / "ab12" / "clip.wav").exists()  # this process is alive, however old its folder
    assert (stranger / "ab12" / "clip.wav").exists()  # not a process's cache: not this sweep's to delete
