"""The `testbed` command: one click group; the commands are in commands.py,
what they print in tables.py."""

import click

from testbed.cli.commands import COMMANDS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="geo-testbed", prog_name="testbed")
def main():
    """geo-testbed: emulated WANs for distributed machine learning."""


for command in COMMANDS:
    main.add_command(command)
