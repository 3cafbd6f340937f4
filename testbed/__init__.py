"""geo-testbed: a Mininet testbed for distributed ML across emulated WANs."""

__version__ = "0.1.0"
