# Codec Workbench: set up, run as a service, test.
#
#   make run      virtual environment + pinned requirements, then supervisord in the foreground
#   make test     test needs (Debian packages, test requirements), then every non-GPU test
#
# Both work on a fresh Debian machine with Python 3.11+; the Debian packages are installed
# (apt-get, non-interactive) only when missing. The virtual environment is reused while the
# requirements files are unchanged (a stamp file per requirements set).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONF ?= supervisord.conf
PYTEST_ARGS ?=

# pesq ships no wheels: pip compiles it, which needs a C toolchain and Python's headers.
BUILD_DEBS := build-essential python3-dev
RUNTIME_DEBS := $(BUILD_DEBS)  # audio decoding needs no system ffmpeg: PyAV carries its libraries
TEST_DEBS := $(RUNTIME_DEBS) ffmpeg sox libsox-fmt-all espeak-ng alsa-utils chromium fonts-liberation nginx fonts-wqy-microhei

# Browser tests drive Debian's /usr/bin/chromium; Playwright never downloads a browser.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
export GRADIO_ANALYTICS_ENABLED := False
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help run start stop restart status tail test lint test-service system-deps test-system-deps venv clean-venv

help:
	@echo "make run           set up and start the service in the foreground (Ctrl-C stops it)"
	@echo "make start|stop    start supervisord in the background | shut it down"
	@echo "make status|tail   supervisorctl status | follow the web UI's log (logs/webui.log)"
	@echo "make test          set up, lint, then run all tests except GPU ones (PYTEST_ARGS=... adds flags)"
	@echo "make lint          ruff check, ruff format --check, mypy core webui"

# ---- virtual environment -------------------------------------------------------------------
$(PY):
	command -v $(PYTHON) >/dev/null 2>&1 || scripts/ensure-debian-packages.sh python3 python3-venv
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), f"Python 3.11+ needed, {sys.executable} is {sys.version.split()[0]}; set PYTHON=..."'
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); scripts/ensure-debian-packages.sh python3-venv; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.stamp-runtime: requirements.txt | $(PY)
	@echo "installing requirements.txt into $(VENV) (the first time downloads torch: minutes)"
	@start=$$(date +%s); $(PY) -m pip install -q -r requirements.txt; \
	  echo "requirements installed in $$(( $$(date +%s) - start )) s"
	@touch $@

$(VENV)/.stamp-test: requirements.txt requirements-test.txt | $(PY)
	@echo "installing requirements-test.txt into $(VENV) (the first time downloads torch: minutes)"
	@start=$$(date +%s); $(PY) -m pip install -q -r requirements-test.txt; \
	  echo "test requirements installed in $$(( $$(date +%s) - start )) s"
	@touch $@ $(VENV)/.stamp-runtime

venv: $(VENV)/.stamp-runtime

clean-venv:
	rm -rf $(VENV)

system-deps:
	@scripts/ensure-debian-packages.sh $(RUNTIME_DEBS)

test-system-deps:
	@STRICT=1 scripts/ensure-debian-packages.sh $(TEST_DEBS)

# ---- service ---------------------------------------------------------------------------
# supervisord.conf sets these for the app, so values from the shell would be silently ignored.
SERVICE_SETTINGS := CODEC_MODEL CODEC_DEVICE CODEC_DTYPE CODEC_HOST CODEC_PORT
WARN_SHELL_SETTINGS = for v in $(SERVICE_SETTINGS); do \
	  [ -z "$${!v:-}" ] || echo "note: $$v from the shell is not used; set it in supervisord.local.conf (docs/service.md)" >&2; \
	done

run: system-deps $(VENV)/.stamp-runtime
	@mkdir -p logs
	@$(WARN_SHELL_SETTINGS)
	exec $(VENV)/bin/supervisord -n -c $(CONF)

start: system-deps $(VENV)/.stamp-runtime
	@mkdir -p logs
	@$(WARN_SHELL_SETTINGS)
	$(VENV)/bin/supervisord -c $(CONF)
	@echo "started; 'make status', 'make tail', 'make stop'"

stop:
	$(VENV)/bin/supervisorctl -c $(CONF) shutdown

restart:
	$(VENV)/bin/supervisorctl -c $(CONF) restart webui

status:
	$(VENV)/bin/supervisorctl -c $(CONF) status

tail:
	$(VENV)/bin/supervisorctl -c $(CONF) tail -f webui

# ---- tests -----------------------------------------------------------------------------
lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: test-system-deps lint
	$(PY) -m pytest -m "not gpu" --timeout=900 $(PYTEST_ARGS)

test-service: $(VENV)/.stamp-test
	$(PY) -m pytest tests/service --timeout=600 $(PYTEST_ARGS)
