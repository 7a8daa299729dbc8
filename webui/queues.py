"""The event queues, in one place. Gradio runs each concurrency group's events one batch at a time;
which group an event joins decides what it can hold up.

``MODEL_GROUP`` (limit 1): every event that runs the model, so the device runs one job at a time
and the others queue (the queue shows their position). The CPU-only follow-ups have their own
groups so they never hold up the next model job. Status and stats answer during a job.
"""

from __future__ import annotations

from typing import Any

MODEL_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="model")  # one device job at a time
METRICS_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="metrics")  # CPU: PESQ, STOI, verdict
LAB_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="lab")  # CPU: timeline, token usage
# CPU: a file just given, read to say at once what is wrong with it; behind no job and holding none up
CHECK_GROUP: dict[str, Any] = dict(concurrency_limit=2, concurrency_id="check")
# CPU: the round trip's report; not behind the verdict and the comparison table, which it does not need
REPORT_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="report")
ABX_GROUP: dict[str, Any] = dict(concurrency_limit=4, concurrency_id="abx")  # answers: SQLite, no model
FETCH_GROUP: dict[str, Any] = dict(concurrency_limit=2, concurrency_id="fetch")  # URL downloads
DOCTOR_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="doctor")  # its model calls take the
# engine's lock one at a time, so a diagnosis never holds the model queue for its whole run
STATUS_GROUP: dict[str, Any] = dict(concurrency_limit=None, concurrency_id="status")  # reads, no work
STATS_GROUP: dict[str, Any] = dict(concurrency_limit=None, concurrency_id="stats")  # the System tab's timer
FINETUNE_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="finetune")  # the Fine-tune tab: plan,
# start and stop (the run is a process of its own), never behind the model queue's decoding
