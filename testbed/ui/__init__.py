"""Pages for watching a run: the live page of a running experiment, the
static replay of a finished one, and a drawing of a topology."""
