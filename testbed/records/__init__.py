"""What a run leaves on disk: its folder (status, spec, events, samples) and
the record of the machine's CPU over it."""
