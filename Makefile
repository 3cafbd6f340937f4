# The README's commands.  Both install what they need first (idempotent):
# `make run` what running needs, `make test` the test tools as well.
VENV := .venv
TESTBED := $(VENV)/bin/testbed
PYTEST := $(VENV)/bin/python -m pytest

.PHONY: install install-test run test test-unit clean selftest bench vm-tools vm-image vm vm-test vm-bench box

install:
	bash scripts/install.sh

install-test:
	bash scripts/install.sh --test

run: install
	$(TESTBED) run topologies/quickstart.yaml

# The unit tests run on every core at once (pytest-xdist); the tests that build
# networks run one at a time after them, since they time real links, and the
# VM smoke test (tests/vm, which needs QEMU: vm-tools installs it) last.  Both
# parts run whatever the first gives; each lists its 25 slowest tests.  The
# suite should take under 15 minutes on two cores.
test: install-test vm-tools
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

# The Debian 12 VM with the kernel's netem (docs/vm.md).  Its image is built
# once (vm/build.sh, cached) and booted with QEMU: KVM where it works, else TCG.
VM := python3 vm/run.py

vm-tools:
	bash vm/tools.sh

vm-image: vm-tools
	bash vm/build.sh

vm: vm-tools
	$(VM) --shell

vm-test: vm-tools
	$(VM) -- bash vm/in-vm-test.sh

vm-bench: vm-tools
	$(VM) -- 'COLUMNS=160 python benchmarks/scale.py --delay-backend netem'

box: vm-tools
	bash vm/box.sh
