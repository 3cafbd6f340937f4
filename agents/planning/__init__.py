"""Pure planning over a WAN of DCs: linear programs, tree packings, and
the WAN model they read (used by the bounds and by the planning overlay)."""
