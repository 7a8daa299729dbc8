"""docs/api.md's endpoint table against the running app: every public endpoint that
``gradio_client``'s ``view_api`` lists has its row, every row names an endpoint the app serves (or
says when it is served), and a row says "–" exactly when the endpoint takes no input."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
_ROW = re.compile(r"^\| `(/\w+)` \| (.*?) \| (.*) \|$", re.M)


def documented() -> dict[str, str]:
    """{endpoint: its inputs cell} from the table."""
    return {name: inputs for name, inputs, _returns in _ROW.findall(DOC.read_text(encoding="utf-8"))}


def test_the_api_table_is_the_apps(client):
    served = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    rows = documented()
    assert len(rows) >= 10  # the table was read
    missing = sorted(set(served) - set(rows))
    assert not missing, f"docs/api.md has no row for: {missing}"
    extra = sorted(n for n in set(rows) - set(served) if "only when" not in DOC.read_text().split(f"`{n}`", 1)[1][:400])
    assert not extra, f"docs/api.md lists endpoints the app does not serve: {extra}"
    for name, info in served.items():
        takes_nothing = not info["parameters"]
        assert (rows[name].strip() == "–") == takes_nothing, (name, rows[name][:60], len(info["parameters"]))
