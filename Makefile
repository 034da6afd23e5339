# The two fresh-machine commands: `make demo` and `make test`.
# PYTHON and TORCH can be overridden, e.g. `make demo TORCH="torch==2.4.1+cu121"` on a GPU machine.
PYTHON ?= python3
TORCH ?= torch==2.13.0

.PHONY: install demo test

install:
	$(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -e ".[test]"

demo: install
	bash recipes/demo.sh

test: install
	$(PYTHON) -m pytest -q tests
