"""JSON a client sends is parsed with its nesting bounded (webui.serving.json_text): 100,000 nested
brackets are "not JSON" (a 400 on the routes), not a RecursionError (a bare 500)."""

from __future__ import annotations

import json

import pytest

from webui.serving import json_text


def test_ordinary_bodies_parse_as_json_does():
    for body in (b'{"screen": 0, "ratings": {"a": 50}}', b"[1, [2, [3]]]", b'"[[[[ in a string ]]]]"', b"7"):
        assert json_text.loads(body) == json.loads(body)
    assert json_text.depth(b'{"a": "[[[[[[", "b": [1]}') == 2  # brackets in strings do not count


def test_deep_nesting_is_refused_before_it_is_parsed():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ValueError, match="nested deeper than 32"):
        json_text.loads(deep)
    with pytest.raises(ValueError):
        json_text.loads('{"type": "stop"' + "[" * 40)  # text too, and a broken one is still "not JSON"
