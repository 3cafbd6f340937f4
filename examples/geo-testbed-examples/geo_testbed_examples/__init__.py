"""Example plug-ins for geo-testbed, one per kind a researcher is most
likely to bring: copy this package, rename it, and replace what is inside.

- `sync.LocalSGDServerMomentum`  local SGD whose roots keep a momentum over rounds
- `overlay.RegionalPS`           a hierarchical parameter server: regions, then a root
- `model.BatchNormCNN`           a small CNN with BatchNorm
- `dataset.NpzFile`              arrays read from one .npz file in data_dir

Installed (`pip install ./examples/geo-testbed-examples` into the
testbed's virtualenv), each is known by its entry point's name
(`sync: local-momentum`); without installing, name it by file and class
(`sync: ./sync.py:LocalSGDServerMomentum`, relative to the topology).
"""
