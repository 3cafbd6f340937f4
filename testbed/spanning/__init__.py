"""One emulated WAN over several machines: which machine builds which
data centers, the server each machine runs, and the driver's view of the
whole."""
