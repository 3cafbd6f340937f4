"""What a run folder says: summaries and plots of one run, a search's
report, each synchronization against its bound, statistics over repeated
runs, the overlay's trees drawn."""
