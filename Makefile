# The README's commands.  Both install what they need first (idempotent):
# `make run` what running needs, `make test` the test tools as well.
VENV := .venv
TESTBED := $(VENV)/bin/testbed
PYTEST := $(VENV)/bin/python -m pytest
# One unit-test process more than there are cores: many of them wait on sockets and timers.
UNIT_PROCS := $(shell echo $$(( $$(nproc) + 1 )))

.PHONY: install install-test run test test-unit clean selftest bench vm-tools vm-image vm vm-test vm-bench vm-cluster box

install:
	bash scripts/install.sh

install-test:
	bash scripts/install.sh --test

run: install
	$(TESTBED) run topologies/quickstart.yaml

# The unit tests run on every core and one more (pytest-xdist); the tests
# that build networks then run three at a time, a test file to a process
# (most of a network test's time is waiting on emulated links, and every
# run's names carry its run id, so two never meet), the longest files first
# (tests/mininet/conftest.py); the VM smoke test (tests/vm, which needs QEMU:
# vm-tools installs it) last, alone.  Each part runs whatever the one before
# gave, and lists its 25 slowest tests.  The suite should take under 15
# minutes on two cores.
test: install-test vm-tools
	$(PYTEST) tests/unit -n $(UNIT_PROCS) --dist worksteal --durations=25; unit=$$?; \
	$(PYTEST) tests/mininet -n 3 --dist loadfile --no-loadscope-reorder --durations=25; net=$$?; \
	$(PYTEST) tests/vm --durations=25; vm=$$?; \
	test $$unit -eq 0 -a $$net -eq 0 -a $$vm -eq 0

test-unit: install-test
	$(PYTEST) tests/unit -n $(UNIT_PROCS) --dist worksteal

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

# One WAN across VMs (vm/cluster.py): 2 VMs, `testbed selftest --cluster` in
# the first; e.g. CLUSTER_ARGS='--machines 3 -- FILE --place DC=192.0.2.3 ...'.
vm-cluster: vm-tools
	python3 vm/cluster.py $(CLUSTER_ARGS)

box: vm-tools
	bash vm/box.sh
