# The README's commands.  Both install what they need first (idempotent):
# `make run` what running needs, `make test` the test tools as well.
VENV := .venv
TESTBED := $(VENV)/bin/testbed
PYTEST := $(VENV)/bin/python -m pytest

.PHONY: install install-test run test test-unit clean selftest bench

install:
	bash scripts/install.sh

install-test:
	bash scripts/install.sh --test

run: install
	$(TESTBED) run topologies/quickstart.yaml

# The unit tests run on every core at once (pytest-xdist); the tests that build
# networks run one at a time after them, since they time real links.  Both run
# whatever the first gives; each lists its 25 slowest tests.  The suite should
# take under 15 minutes on two cores.
test: install-test
	$(PYTEST) tests/unit -n auto --dist worksteal --durations=25; unit=$$?; \
	$(PYTEST) tests --ignore=tests/unit --durations=25; rest=$$?; \
	test $$unit -eq 0 -a $$rest -eq 0

test-unit: install-test
	$(PYTEST) tests/unit -n auto --dist worksteal

selftest: install
	$(TESTBED) selftest

bench: install
	$(VENV)/bin/python benchmarks/transport_goodput.py
	$(VENV)/bin/python benchmarks/delay_line.py

clean:
	$(TESTBED) clean
