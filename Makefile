# Two commands: `make demo` and `make test`. Each bootstraps .venv on a fresh machine and is a
# no-op setup when pyproject.toml has not changed since the last install.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@echo "installing mnemarket (the first build of llama-cpp-python takes 4-10 minutes)"
	$(PY) -m pip install -q -e '.[local,cluster,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/mnemarket demo

# Static checks (config in pyproject.toml): ruff over src, tests and benchmarks, mypy over src; zero findings.
lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy

# Lint, then start a throwaway PostgreSQL when the machine has one (CI installs it) and run pytest.
# pytest exits 5 when it collects no tests; that is not a failure of the suite.
test: lint
	@. scripts/pg_env.sh; $(PY) -m pytest -q; rc=$$?; pg_env_stop; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

bench: $(STAMP)
	$(PY) benchmarks/kernel_bench.py
	$(PY) benchmarks/memory_bench.py
	$(PY) benchmarks/providers_bench.py

clean:
	rm -rf $(VENV) .pgdata build src/*.egg-info
