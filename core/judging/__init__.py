"""Judging a round trip for people: ``verdict`` (a traffic light in words), ``abx`` (blind ABX
tests and their store), ``report`` (a shareable zip and HTML page), ``evaluate`` (a folder of
files round-tripped and judged)."""
