"""Judging a round trip for people: ``verdict`` (a traffic light in words), ``placing`` (where the
codec stands among the other sources), ``sources`` (those sources), ``report`` (a shareable zip and
HTML page), ``evaluate`` (a folder of files round-tripped and judged). Listening tests with people
are :mod:`core.listening`'s."""
