"""A synchronization plan as pure data: what every overlay returns and the
executor carries out.

The model is one flat float32 vector of `size` elements.  A plan cuts it
into pieces (element ranges, together covering the vector once) and gives
each piece two trees over agent names:

- aggregation: `parent[node]` for every node that sends the piece upward
  (every contributor, and every relay on the way), ending at the piece's
  `root`, which folds the sum in with the sync rule;
- distribution: `children[node]`, the nodes a holder of the new values
  forwards them to, starting at the root.

Plans round-trip through JSON, so a static overlay's plan is written into
each agent's config by the runner and is on disk in the run folder.
"""

from dataclasses import dataclass


class PlanError(ValueError):
    """A plan that would aggregate a contribution twice, lose one, or leave
    a contributor without the new model."""


@dataclass(frozen=True)
class Piece:
    start: int
    stop: int
    root: str
    parent: dict          # {node: parent}, the root absent
    children: dict        # {node: [children]} of the distribution tree

    @property
    def size(self):
        return self.stop - self.start

    def agg_children(self, node):
        return sorted(n for n, p in self.parent.items() if p == node)

    def dist_parent(self, node):
        for holder, kids in self.children.items():
            if node in kids:
                return holder
        return None

    def in_aggregation(self, node):
        return node == self.root or node in self.parent

    def in_distribution(self, node):
        return node == self.root or self.dist_parent(node) is not None

    def subtree_contributors(self, node, contributors):
        """How many contributions a complete partial sum at `node` holds."""
        kids = {}
        for n, p in self.parent.items():
            kids.setdefault(p, []).append(n)
        count, stack = 0, [node]
        while stack:
            n = stack.pop()
            count += n in contributors
            stack.extend(kids.get(n, ()))
        return count

    def to_dict(self):
        return {"start": self.start, "stop": self.stop, "root": self.root,
                "parent": dict(self.parent),
                "children": {k: list(v) for k, v in self.children.items()}}

    @classmethod
    def from_dict(cls, d):
        return cls(int(d["start"]), int(d["stop"]), d["root"], dict(d["parent"]),
                   {k: list(v) for k, v in d["children"].items()})


@dataclass(frozen=True)
class Plan:
    size: int                 # elements of the flat model
    contributors: tuple       # agent names that add a contribution each iteration
    pieces: tuple             # Piece

    @property
    def nodes(self):
        """Every agent the plan gives a part."""
        out = set(self.contributors)
        for p in self.pieces:
            out.add(p.root)
            out.update(p.parent)
            out.update(p.parent.values())
            out.update(p.children)
            for kids in p.children.values():
                out.update(kids)
        return sorted(out)

    def validate(self):
        """Raise PlanError unless every element is in exactly one piece, every
        aggregation tree leads each contributor to its root without a cycle,
        and every distribution tree reaches every contributor once."""
        contributors = set(self.contributors)
        if not contributors:
            raise PlanError("a plan needs at least one contributor")
        at = 0
        for i, p in enumerate(sorted(self.pieces, key=lambda q: q.start)):
            if p.start != at or p.stop <= p.start:
                raise PlanError(f"pieces must cover 0..{self.size} once; piece {i} is "
                                f"{p.start}..{p.stop} where {at} was expected")
            at = p.stop
            if p.root in p.parent:
                raise PlanError(f"piece {i}: its root {p.root} has a parent")
            for node in contributors | set(p.parent):
                seen, here = set(), node
                while here != p.root:
                    if here in seen or here not in p.parent:
                        raise PlanError(f"piece {i}: {node} does not reach the root {p.root}")
                    seen.add(here)
                    here = p.parent[here]
            reached, stack = {p.root}, [p.root]
            while stack:
                for kid in p.children.get(stack.pop(), ()):
                    if kid in reached:
                        raise PlanError(f"piece {i}: the distribution tree reaches {kid} twice")
                    reached.add(kid)
                    stack.append(kid)
            missing = contributors - reached
            if missing:
                raise PlanError(f"piece {i}: the distribution tree misses {', '.join(sorted(missing))}")
        if at != self.size:
            raise PlanError(f"pieces cover 0..{at} of a model of {self.size} elements")
        return self

    def to_dict(self):
        return {"size": self.size, "contributors": list(self.contributors),
                "pieces": [p.to_dict() for p in self.pieces]}

    @classmethod
    def from_dict(cls, d):
        return cls(int(d["size"]), tuple(d["contributors"]),
                   tuple(Piece.from_dict(p) for p in d["pieces"]))


def even_cuts(size, parts):
    """[(start, stop)] of `parts` nearly equal ranges covering 0..size."""
    parts = max(1, min(parts, size))
    edges = [size * i // parts for i in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))
