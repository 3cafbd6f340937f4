"""Code that runs inside emulated hosts: the roles (server, worker,
coordinator, probe, and a search's machines and scheduler), the plug-in
kinds they are assembled from, and the transport between them.  Talks
ZeroMQ over the emulated network only and never imports the orchestrator
(testbed) or Mininet."""
