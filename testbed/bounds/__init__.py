"""How fast one synchronization can be on a WAN, from three sides:
`t_cut` (the pairwise cut bound of cut.py), `t_lb` (the
partial-sum lower bound, tighter where DCs without agents only forward) and
`t_opt` (the best multi-root tree packing, an achievable time, with its
trees)."""

from agents.planning.packing import Packing, Tree, t_opt, tree_packing
from agents.planning.wan import Wan
from testbed.bounds.lower import t_cut, t_lat, t_lb, t_win
from testbed.bounds.model import wan_of

__all__ = ["Wan", "wan_of", "t_cut", "t_lat", "t_win", "t_lb", "t_opt", "tree_packing",
           "Packing", "Tree"]
