"""Pure functions from results to what the page shows: ``formatting`` (status bar, facts, tokens,
metrics, timing, system figures) and ``doctor_panel`` (the doctor's report as a table)."""
