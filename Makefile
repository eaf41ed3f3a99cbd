# One virtualenv for everything; `make demo` and `make test` create it on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-unit soak bench serve clean debian-packages mutations

# The trainers' client libraries that cannot share .venv, each in its own: verifiers pins mcp 2.0 (the mcp extra is
# 2.3); nemo-gym 0.7.0 needs Python 3.13 and declares >=3.13.14, so it is installed past that check on any 3.13
# (pyenv's, or python3.13 on PATH). Without a 3.13 the NeMo Gym recipe's test skips.
RECIPE_ENVS := .venv-verifiers/.installed .venv-nemo-gym/.installed
NEMO_GYM_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python) $(shell command -v python3.13))

$(BIN)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,bench,openenv,mcp]"
	touch $@

DEMO_EPISODES ?= 300
demo: $(BIN)/.installed  ## the main job on the embedded default: local Ray + Serve, rollouts through both drivers, shutdown
	$(BIN)/finsec rollouts -n $(DEMO_EPISODES) -c 32 --driver environment-server --driver legacy-agent \
		--out runs/demo.jsonl --plot runs/demo-plots --fail-on-masked

test: $(BIN)/.installed $(RECIPE_ENVS) debian-packages  ## format check, lint, type check, unit tests (no Ray), the recipes' tests, integration tests (local Ray + Serve over HTTP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not soak"

.venv-verifiers/.installed: pyproject.toml
	$(PYTHON) -m venv .venv-verifiers
	.venv-verifiers/bin/pip install --quiet --upgrade pip
	.venv-verifiers/bin/pip install --quiet -e ".[verifiers]"
	touch $@

.venv-nemo-gym/.installed:
	@if [ -z "$(NEMO_GYM_PYTHON)" ]; then echo "no Python 3.13: the NeMo Gym recipe's test will skip"; exit 0; fi; \
	  set -e; $(NEMO_GYM_PYTHON) -m venv .venv-nemo-gym; \
	  .venv-nemo-gym/bin/pip install --quiet --upgrade pip; \
	  .venv-nemo-gym/bin/pip download --quiet --no-deps --ignore-requires-python nemo-gym==0.7.0 -d .venv-nemo-gym/dl; \
	  .venv-nemo-gym/bin/pip install --quiet --ignore-requires-python .venv-nemo-gym/dl/nemo_gym-0.7.0-py3-none-any.whl; \
	  touch $@

# The mark-store tests run a real redis-server (Debian's package) on a free loopback port, and the run viewer's tests
# open its page in Debian's chromium: install them if missing.
DEBIAN_PACKAGES := redis-server chromium
debian-packages:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do command -v $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing Debian's $$missing (the tests run them)"; \
	  { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing; } >/dev/null 2>&1; \
	  for p in $$missing; do command -v $$p >/dev/null 2>&1 || { \
	    echo "make test needs $$p: install Debian's $$p package (apt-get install $$p)" >&2; exit 1; }; done; \
	fi

test-unit: $(BIN)/.installed
	$(BIN)/python -m pytest tests/unit

soak: $(BIN)/.installed  ## kept out of CI: schema fuzzing of every route, the leak soak, the fault scenarios
	$(BIN)/pip install --quiet -e ".[fuzz]"
	$(BIN)/python -m pytest -m soak tests/fuzz
	$(BIN)/python bench/soak.py
	$(BIN)/python bench/faults.py
	$(BIN)/python bench/faults.py --durable

# The main report's command (bench/README.md): the one process, the app as shipped and in its production shape.
bench: $(BIN)/.installed  ## the main benchmark (~15 min): whole rollouts through Serve against one process
	$(BIN)/python bench/serve_rollouts.py --configs baseline,serve-haproxy,redis-nowatch-haproxy \
		--levels 1,64,256 --rounds 3 --profile

mutations: $(BIN)/.installed  ## 10 contract-breaking mutants of the core, each caught by the fast suite (~3 min)
	$(BIN)/python tests/test_mutations.py

serve: $(BIN)/.installed  ## serve the app from its config until Ctrl-C (which removes the app and its HAProxy)
	$(BIN)/finsec serve configs/serve.yaml

clean:
	rm -rf $(VENV) .venv-verifiers .venv-nemo-gym .pytest_cache .hypothesis
