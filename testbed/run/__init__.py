"""One experiment's life: agent configs, launch, watch, the control
socket, the link sampler, the dynamics engine, and how the run ended."""
