"""One module per tab (or section), each with the same shape: a ``TabHandlers`` subclass whose
methods are the tab's events, and ``build(...)``, which places the components and wires the events
(every event with an ``api_name`` and a queue from ``webui.queues``). The work itself is in
``webui.jobs`` (no Gradio)."""
