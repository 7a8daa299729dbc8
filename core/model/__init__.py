"""The model and the one object that owns it: ``engine`` (lifecycle, lock, jobs), ``calls`` (the
engine's calls into the model under a chunk plan), ``results``, ``planner`` (chunk plans and memory
estimates), ``memory`` (device figures), ``readiness`` (the three-step check), ``weights`` (finding
and loading weights), ``checkpoints`` (random-weight checkpoints with the real classes)."""
