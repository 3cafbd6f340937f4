"""Code that runs inside emulated hosts: server, worker (and later probe,
coordinator).  Talks ZeroMQ over the emulated network only and never
imports the orchestrator (testbed) or Mininet."""
