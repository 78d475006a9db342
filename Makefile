# Paint with Code Studio — the two commands are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export DJANGO_SETTINGS_MODULE ?= paintapp.settings

.PHONY: help setup setup-gpu system-deps browser services demo test test-fast serve workers worker-train worker-render worker-score worker-score-gpu trl-vllm-server beat vlm-server env-server bench lint clean

help:
	@echo "make demo    set everything up and run the studio on http://127.0.0.1:8000"
	@echo "make test    set everything up and run the whole test suite"
	@echo "make setup   install apt packages, the .venv and the npm assets only"
	@echo "make setup-gpu   the same for the GPU box: CUDA torch with its CUDA runtime, and vLLM"
	@echo "make worker-train|worker-render|worker-score   run one worker pool (e.g. on another machine)"
	@echo "make worker-score SCORE_PROCESSES=4   a score worker with 4 processes (a VLM judge wants several)"
	@echo "make vlm-server   serve the published VLM judge with vLLM on a GPU box (port 8001)"
	@echo "make beat    run Celery beat (one per deployment): it sends the reaper of runs whose trainer died"

setup: system-deps $(VENV)/.installed node_modules/.installed browser

# The renderer's Chromium: the distribution's, else Playwright's (scripts/browser.sh says which).
browser: $(VENV)/.installed
	@scripts/browser.sh

system-deps:
	@scripts/system-deps.sh

# The .venv from a requirements file, then this project as an editable install.
define install_venv
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r $(1)
	$(PIP) install -q --no-deps -r requirements-tracking.txt
	$(PIP) install -q --no-deps -r requirements-openenv.txt
	$(PIP) install -q --no-deps --no-build-isolation -e .
endef

$(VENV)/.installed: requirements.txt requirements-tracking.txt requirements-openenv.txt pyproject.toml
	$(call install_venv,requirements.txt)
	@touch $@

# The GPU box: requirements-gpu.txt is requirements.txt with PyPI's CUDA torch (and its CUDA
# runtime packages) and vLLM; it replaces a CPU torch already in the .venv. It also satisfies
# requirements.txt, so `make test` / `make demo` there do not reinstall.
setup-gpu: system-deps $(VENV)/.installed-gpu node_modules/.installed browser

$(VENV)/.installed-gpu: requirements-gpu.txt requirements.txt requirements-tracking.txt requirements-openenv.txt pyproject.toml
	$(call install_venv,requirements-gpu.txt)
	@touch $@ $(VENV)/.installed

# CodeMirror is bundled from npm into one file for the rollout editor (never committed).
node_modules/.installed: package.json package-lock.json static/src/codemirror-entry.js
	npm ci --no-audit --no-fund
	npm run --silent build
	@touch $@

services:
	@scripts/services.sh required

demo: setup
	@scripts/services.sh optional
	$(PY) manage.py migrate --no-input
	$(PY) manage.py demo_curator
	$(PY) manage.py demo_setup
	$(PY) manage.py demo_banner
	$(VENV)/bin/honcho start -f Procfile

# Three test processes (pytest-xdist), a test file each at a time: the suite mostly waits on
# Chromium, workers and training, so one process leaves a core idle (measured on 2 cores from a
# fresh clone: 14:32 with two, 11:58 with three). Each process has its own test database and
# Redis databases (tests/conftest.py). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 3
PYTEST := $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# glibc hands every freed block above its mmap threshold back to the kernel and trims the heap's
# top, so a CPU training step's tensors (logits and gradients, a few MiB each) come back as fresh
# pages the kernel zeroes: measured 8.8 of 45 CPU-s in the kernel for a tiny model's SFT warm start,
# and 1.0 of 37.5 with these (blocks up to 32 MiB reused from the heap, which is never trimmed).
# A training process keeps its peak heap; the train worker starts a fresh one per task.
MALLOC_REUSE := MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=67108864
# Where the machine's environment sets PYTHONDONTWRITEBYTECODE (container images do, these
# machines too), every process the suite starts (~200: workers, trainers, commands) would compile
# the project's modules from source (0.3-0.5 CPU s a worker) and each test process would rewrite
# every test module's asserts again (~4 CPU s): the suite writes bytecode (git ignores it).
SUITE_ENV := PYTHONDONTWRITEBYTECODE= $(MALLOC_REUSE)

test: setup services
	$(SUITE_ENV) $(PYTEST)

test-fast: setup services
	$(SUITE_ENV) $(PYTEST) -m "not slow"

worker-train:
	$(MALLOC_REUSE) $(VENV)/bin/celery -A paintapp worker -Q train -c 1 -n train@%h --loglevel=INFO --max-tasks-per-child=1

worker-render:
	$(VENV)/bin/celery -A paintapp worker -Q render -c $${RENDER_CONCURRENCY:-2} -n render@%h --loglevel=INFO --max-tasks-per-child=200

# Processes of a score worker: `make worker-score SCORE_PROCESSES=4` (or SCORE_CONCURRENCY in the
# environment, as the Procfile reads it). A VLM judge mostly waits on its endpoint: give it several
# processes (each judges a painting's 8 calls at once, PAINTAPP_JUDGE_CONCURRENCY).
SCORE_PROCESSES ?= $(or $(SCORE_CONCURRENCY),1)

worker-score:
	$(VENV)/bin/celery -A paintapp worker -Q score -c $(SCORE_PROCESSES) -n score@%h --loglevel=INFO

# A GPU box's HPSv3 scorer: one process on GPU $(GPU) for the queue PAINTAPP_GPU_SCORE_QUEUE names
# (set it, e.g. score-gpu, for every process of the deployment); one such worker per GPU.
GPU ?= 0
worker-score-gpu:
	CUDA_VISIBLE_DEVICES=$(GPU) $(VENV)/bin/celery -A paintapp worker -Q $${PAINTAPP_GPU_SCORE_QUEUE:-score-gpu} -c 1 \
		-n score-gpu$(GPU)@%h --loglevel=INFO

# The vLLM server of runs launched with generation=vllm-server (GPU box, vllm installed): TRL's
# own server on 8002, since 8000 is the studio's. MODEL is the run's base model. It needs a GPU
# of its own (NCCL refuses two ranks on one device): VLLM_GPUS picks it (default the last of
# two). It listens on 127.0.0.1 unless VLLM_SERVER_HOST says otherwise: its weight-update
# endpoints are open to whoever reaches it.
trl-vllm-server:
	CUDA_VISIBLE_DEVICES=$${VLLM_GPUS:-1} $(VENV)/bin/trl vllm-serve --model "$${MODEL:?set MODEL=the run's base model}" \
		--host $${VLLM_SERVER_HOST:-127.0.0.1} --port 8002 --gpu_memory_utilization $${VLLM_GPU_MEMORY_UTILIZATION:-0.9} \
		--tensor_parallel_size $${VLLM_TENSOR_PARALLEL_SIZE:-1} --max_model_len $${VLLM_MAX_MODEL_LEN:-20480}

# Exactly one per deployment: every TRAINER_REAP_EVERY_S it sends training.tasks.reap_runs to a
# score worker (its schedule file is var/celerybeat-schedule).
beat:
	$(VENV)/bin/celery -A paintapp beat --loglevel=INFO

# A frozen pool as an OpenEnv environment on port 8010 (docs/openenv.md): make env-server POOL=hibiscus:3
ENV_RECIPE ?= studio-judge-led
env-server:
	$(PY) manage.py serve_env --pool $(POOL) --recipe $(ENV_RECIPE) --port 8010

# The published VLM judge (Qwen3-VL-30B-A3B-Instruct) served by vLLM on a GPU box, on port 8001
# (PAINTAPP_VLM_BASE_URL=http://127.0.0.1:8001/v1); says how to install vllm where it is missing.
vlm-server:
	@VENV=$(VENV) scripts/vlm-server.sh

# ruff (rules in pyproject.toml) and import-linter's layer contracts; CI runs it after the tests.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

bench: setup
	$(PY) bench/render.py

clean:
	rm -rf var staticfiles .pytest_cache
