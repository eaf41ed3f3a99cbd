# One virtualenv for everything; `make demo` and `make test` create it on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-unit soak bench serve clean redis-server mutations

$(BIN)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,bench,openenv,mcp]"
	touch $@

DEMO_EPISODES ?= 300
demo: $(BIN)/.installed  ## the main job on the embedded default: local Ray + Serve, rollouts through both drivers, shutdown
	$(BIN)/finsec rollouts -n $(DEMO_EPISODES) -c 32 --driver environment-server --driver legacy-agent \
		--out runs/demo.jsonl --plot runs/demo-plots --fail-on-masked

test: $(BIN)/.installed redis-server  ## lint, unit tests (no Ray) and integration tests (local Ray + Serve over HTTP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -m "not soak"

# The mark-store tests run a real redis-server (Debian's package) on a free loopback port: install it if missing.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing Debian's redis-server package (the mark-store tests run a real one)"; \
	  { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq redis-server; } >/dev/null 2>&1; \
	  command -v redis-server >/dev/null 2>&1 || { \
	    echo "make test needs redis-server: install Debian's redis-server package (apt-get install redis-server)" >&2; \
	    exit 1; }; }

test-unit: $(BIN)/.installed
	$(BIN)/python -m pytest tests/unit

soak: $(BIN)/.installed  ## kept out of CI: schema fuzzing of every route, the leak soak, the fault scenarios
	$(BIN)/pip install --quiet -e ".[fuzz]"
	$(BIN)/python -m pytest -m soak tests/fuzz
	$(BIN)/python bench/soak.py
	$(BIN)/python bench/faults.py

# The main report's command (bench/README.md): the one process, the app as shipped and in its production shape.
bench: $(BIN)/.installed  ## the main benchmark (~15 min): whole rollouts through Serve against one process
	$(BIN)/python bench/serve_rollouts.py --configs baseline,serve-haproxy,redis-nowatch-haproxy \
		--levels 1,64,256 --rounds 3 --profile

mutations: $(BIN)/.installed  ## 10 contract-breaking mutants of the core, each caught by the fast suite (~3 min)
	$(BIN)/python tests/test_mutations.py

serve: $(BIN)/.installed  ## serve the app from its config until Ctrl-C (which removes the app and its HAProxy)
	$(BIN)/finsec serve configs/serve.yaml

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
