# The README's commands.  Both install what they need first (idempotent).
VENV := .venv
TESTBED := $(VENV)/bin/testbed

.PHONY: install run test test-unit clean selftest bench

install:
	bash scripts/install.sh

run: install
	$(TESTBED) run topologies/quickstart.yaml

# The slowest tests are listed at the end: the suite should take under 15 minutes here.
test: install
	$(VENV)/bin/python -m pytest tests --durations=25

test-unit: install
	$(VENV)/bin/python -m pytest tests/unit

selftest: install
	$(TESTBED) selftest

bench: install
	$(VENV)/bin/python benchmarks/transport_goodput.py
	$(VENV)/bin/python benchmarks/delay_line.py

clean:
	$(TESTBED) clean
