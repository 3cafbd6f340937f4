"""Synchronization schemes: the server-side rule of each, one module each."""

from agents.sync import ssgd

SCHEMES = {"ssgd": ssgd}
