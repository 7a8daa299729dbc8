"""The tabs' work without Gradio: ``codec`` (round trip, metrics, encode, decode), ``lab`` (the
listening lab's sources, timeline, ladder, token usage), ``common`` (progress, safe names)."""
