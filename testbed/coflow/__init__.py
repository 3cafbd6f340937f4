"""Coflow scheduling for jobs that share a network: the big-switch model,
the policies (fair, fifo-lm, sincronia, beamer, varys), a fluid simulator
that drives them, a successive-halving search workload and lower bounds."""
