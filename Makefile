# The README's commands.  Both install what they need first (idempotent).
VENV := .venv
TESTBED := $(VENV)/bin/testbed

.PHONY: install run test test-unit clean selftest bench vm-tools vm-image vm vm-test vm-bench box

install:
	bash scripts/install.sh

run: install
	$(TESTBED) run topologies/quickstart.yaml

# The slowest tests are listed at the end: the suite should take under 15 minutes here.
# The VM smoke test (tests/vm) runs last and needs QEMU: vm-tools installs it.
test: install vm-tools
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
