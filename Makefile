# Codec Workbench: set up, run as a service, test.
#
#   make run        virtual environment + what the app needs, then supervisord in the foreground
#   make test       test needs (Debian packages, every requirements file), lint, then every non-GPU test
#   make test-fast  the edit-test loop: no browser, no service, no slow tests (a few minutes)
#   make test-slow  the slow end-to-end tests make test leaves out (nginx replicas, supervisord, Ray, flows)
#   make test-long  the long tests make test leaves out (a 10-minute clip, the soak); CI runs both after make test
#   make screenshots  the docs' screenshots (docs/*.png) and the browser figures in bench/results, written
#                   only here (DOCS_SCREENSHOTS=1): the test groups leave a fresh clone's git status clean
#
# Both work on a fresh Debian machine with Python 3.11+; the Debian packages are installed
# (apt-get, non-interactive) only when missing. The virtual environment is reused while the
# requirements files are unchanged (a stamp file per requirements set).
#
# The requirements*.txt files are the one list of dependencies: pyproject.toml reads them for
# `pip install .` (requirements.txt) and its extras ([judging], [dataset], [test]).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONF ?= supervisord.conf
PYTEST_ARGS ?=
# Test processes (pytest-xdist): one per core of the 2-core machines this runs on; whole files go to one
# process (--dist loadfile), so a module's served app or browser is started once. Files are handed out
# in the order tests/conftest.py gives them (longest first: LONGEST_FIRST); --no-loadscope-reorder
# stops xdist from putting the files with the most tests first instead (the long one-test files ran last).
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
# One OpenMP thread per test process (and the servers it starts): two processes with two threads each
# on two cores spin-wait against each other (tests/core 8 % slower that way).
TEST_ENV := OMP_NUM_THREADS=1
APP_REQS := requirements.txt requirements-judging.txt  # the app (its verdict needs the MOS model)
NODEPS_REQS := requirements-judging-nodeps.txt  # installed after the others, without their declared needs
TEST_REQS := $(APP_REQS) requirements-dataset.txt requirements-training.txt requirements-postgres.txt requirements-test.txt  # make test runs every test
FAST_MARKERS := not gpu and not browser and not service and not slow and not long
# Three groups, every non-GPU test in exactly one, so that `make test` keeps to 10 minutes on the 2-core
# machine; .ci/run runs all three. Slow end-to-end tests (pytest marker `slow`: nginx replicas,
# supervisord, Ray runs and their kill-and-resume, the compiled decoder, the demo flow in chromium)
# run in `make test-slow`; tests of several minutes each (marker `long`: the 10-minute clip, the
# 200-request soak) in `make test-long`; each group beside itself in two processes, except the tests
# marked `alone` (a real-time measurement on the machine's cores), which run after their group, one at a time.
TEST_MARKERS := not gpu and not long and not slow
SLOW_MARKERS := slow and not gpu and not long
LONG_MARKERS := long and not gpu

# pesq ships no wheels: pip compiles it, which needs a C toolchain and Python's headers.
BUILD_DEBS := build-essential python3-dev
RUNTIME_DEBS := $(BUILD_DEBS)  # audio decoding needs no system ffmpeg: PyAV carries its libraries
TEST_DEBS := $(RUNTIME_DEBS) ffmpeg sox libsox-fmt-all espeak-ng alsa-utils chromium fonts-liberation nginx fonts-wqy-microhei postgresql

# Browser tests drive Debian's /usr/bin/chromium; Playwright never downloads a browser.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
export GRADIO_ANALYTICS_ENABLED := False
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help run start stop restart status tail test test-fast test-slow test-long screenshots lint test-service system-deps test-system-deps venv clean-venv

help:
	@echo "make run           set up and start the service in the foreground (Ctrl-C stops it)"
	@echo "make start|stop    start supervisord in the background | shut it down"
	@echo "make status|tail   supervisorctl status | follow the web UI's log (logs/webui.log)"
	@echo "make test          set up, lint, then every test but the GPU, slow and long ones (PYTEST_ARGS=... adds flags)"
	@echo "make test-fast     no browser, no service, no slow tests: the edit-test loop"
	@echo "make test-slow     the slow end-to-end tests make test leaves out (replicas, supervisord, Ray, flows)"
	@echo "make test-long     the long tests make test leaves out (10-minute clip, soak); CI runs all three"
	@echo "make screenshots   the docs' screenshots and the browser figures in bench/results (DOCS_SCREENSHOTS=1)"
	@echo "make lint          ruff check, ruff format --check, mypy, eslint webui/static"

# ---- virtual environment -------------------------------------------------------------------
# uv installs the requirements (the same versions pip resolves: checked with pip freeze): it fetches
# and unpacks wheels in parallel, 28 s for every requirements file against pip's 109 s with a warm
# cache on the 2-core machine. --compile-bytecode writes the .pyc files pip writes: these machines
# set PYTHONDONTWRITEBYTECODE, so without them every process compiles torch, gradio and transformers
# again (importing them took 17.6 s instead of 9.8 s, in each test server). pip stays the fallback.
UV_VERSION := 0.13.9
PIP_INSTALL = { $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) $(1) || $(PY) -m pip install -q $(1); }
$(PY):
	command -v $(PYTHON) >/dev/null 2>&1 || scripts/ensure-debian-packages.sh python3 python3-venv
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), f"Python 3.11+ needed, {sys.executable} is {sys.version.split()[0]}; set PYTHON=..."'
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); scripts/ensure-debian-packages.sh python3-venv; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q uv==$(UV_VERSION)

$(VENV)/.stamp-runtime: $(APP_REQS) $(NODEPS_REQS) | $(PY)
	@echo "installing $(APP_REQS) into $(VENV) (the first time downloads torch: minutes)"
	@start=$$(date +%s); $(call PIP_INSTALL,$(addprefix -r ,$(APP_REQS))); $(call PIP_INSTALL,--no-deps -r $(NODEPS_REQS)); \
	  echo "requirements installed in $$(( $$(date +%s) - start )) s"
	@touch $@

$(VENV)/.stamp-test: $(TEST_REQS) $(NODEPS_REQS) | $(PY)
	@echo "installing $(TEST_REQS) into $(VENV) (the first time downloads torch: minutes)"
	@start=$$(date +%s); $(call PIP_INSTALL,$(addprefix -r ,$(TEST_REQS))); $(call PIP_INSTALL,--no-deps -r $(NODEPS_REQS)); \
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
# ESLint (and axe-core for the accessibility tests) from npm, at the versions package-lock.json pins.
ESLINT := node_modules/.bin/eslint
$(ESLINT): package.json package-lock.json
	command -v npm >/dev/null 2>&1 || scripts/ensure-debian-packages.sh nodejs npm
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

lint: $(VENV)/.stamp-test $(ESLINT)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(ESLINT) webui/static

# axe-core (package.json, pinned): the accessibility tests inject it into the page. npm comes with
# Node.js where it is installed (a NodeSource build carries its own); Debian's npm otherwise.
node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || scripts/ensure-debian-packages.sh npm
	npm ci --no-audit --no-fund --loglevel=error

test: test-system-deps lint node_modules/.package-lock.json
	$(TEST_ENV) $(PY) -m pytest -m "$(TEST_MARKERS)" $(XDIST) --timeout=900 --durations=15 $(PYTEST_ARGS)

test-slow: test-system-deps $(VENV)/.stamp-test node_modules/.package-lock.json
	$(TEST_ENV) $(PY) -m pytest -m "$(SLOW_MARKERS)" $(XDIST) --timeout=900 --durations=10 $(PYTEST_ARGS)

test-long: test-system-deps $(VENV)/.stamp-test node_modules/.package-lock.json
	$(TEST_ENV) $(PY) -m pytest -m "$(LONG_MARKERS) and not alone" $(XDIST) --timeout=1200 --durations=5 $(PYTEST_ARGS)
	$(TEST_ENV) $(PY) -m pytest -m "$(LONG_MARKERS) and alone" --timeout=1200 --durations=5 $(PYTEST_ARGS)

# The browser tests that save the docs' pictures (and bench/results/live_browser.json); every other run of
# them takes and checks the same screenshots but writes nothing into the tree (tests/docs_output.py).
SCREENSHOT_TESTS := $(addprefix tests/webui/,test_demo_flow_browser.py test_lab_browser.py test_compare_browser.py \
	test_live_browser.py test_parity_browser.py test_share_browser.py test_voice_card_browser.py \
	test_webui_browser_i18n.py test_webui_abx.py test_finetune_browser.py test_presenter_browser.py)
screenshots: test-system-deps $(VENV)/.stamp-test node_modules/.package-lock.json
	DOCS_SCREENSHOTS=1 $(TEST_ENV) $(PY) -m pytest -m "not gpu" $(XDIST) --timeout=900 $(PYTEST_ARGS) $(SCREENSHOT_TESTS)

test-fast: $(VENV)/.stamp-test
	$(TEST_ENV) $(PY) -m pytest -m "$(FAST_MARKERS)" $(XDIST) --timeout=300 --durations=10 $(PYTEST_ARGS)

test-service: $(VENV)/.stamp-test
	$(PY) -m pytest tests/service --timeout=600 $(PYTEST_ARGS)
