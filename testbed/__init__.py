"""geo-testbed: a Mininet testbed for distributed ML across emulated WANs.

The Python API (`testbed.api`) is here too: `testbed.Experiment`,
`testbed.Run`, `testbed.load_run`, `testbed.SpecError`."""

__version__ = "0.1.0"

_API = ("Experiment", "Run", "load_run", "SpecError")


def __getattr__(name):
    # The API on first use: `import testbed` stays cheap for the command line.
    if name in _API:
        from testbed import api
        return getattr(api, name)
    raise AttributeError(f"module 'testbed' has no attribute {name!r}")
