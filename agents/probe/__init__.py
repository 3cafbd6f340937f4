"""Network awareness: per-DC probes that estimate bandwidth and RTT between
data centers from active packet trains and passive transfer goodput."""
