"""Codec Workbench's web UI (Gradio): ``app.build_app(engine)`` builds the page from ``tabs/``;
``server.launch`` serves it with the guards of ``serving/``; ``python -m webui`` starts it all.
Core never imports this package."""
