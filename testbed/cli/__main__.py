"""`python -m testbed.cli`, as the `testbed` script."""

from testbed.cli import main

main()
