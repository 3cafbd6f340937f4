"""Coflow scheduling: the big-switch model, the policies that order and
rate coflows (for the live scheduler and the simulator alike) and the
synthetic hyper-parameter search that makes them."""
