"""HiBO (arXiv 2410.23148): a global search tree that partitions the knob space by observed performance, whose
node scores steer the acquisition of a local GP optimizer.

- **Partitioning.** Each node splits its samples in two with k-means on (configuration, performance); an SVM
  learns the boundary in configuration space, so any new point can be routed to a leaf. The "good" child holds
  the cluster with the better mean. Splitting stops at ``max_depth`` or when a node has too few samples.
- **Scores.** Every leaf gets a UCT score: its mean normalized performance plus ``cp * sqrt(2 ln N / n)``. A
  softmax over the scores gives each leaf a weight in (0, 1].
- **Acquisition.** A GP on all samples gives qLogEI; a candidate's value is logEI + log(weight of its leaf).
  Candidates are a Sobol sweep of the whole space, Gaussian steps around the best points (a trust region), and
  sparse moves from the best points that redraw one to three knobs only (in a space of 20-30 knobs, a step in
  every coordinate rarely keeps what made a point good; knobs that pay only together are found by moving a few),
  so the search can jump between regions the tree ranks well and refine inside them.
- **Adaptive depth.** The tree is as deep as the data supports (one level per ``2 * min_leaf`` samples, up to
  ``max_depth``); when the best has not improved for ``patience`` trials it is cut one level shallower and the
  exploration constant doubled, so a partition that stopped paying is trusted less.
- **The guard.** Constraint-aware as ``bo.ModelSearch`` is: the GP's acquisition is weighted by the probability
  that no statement regresses; the tree sees a regressing or failed trial as no better than the worst trial (so
  its leaf scores low), and the trust region is centred on the best trials that regressed nothing.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from optimizers.knobs.bo import ModelSearch, prefer_no_restart, score
from optimizers.knobs.problem import KnobOptimizer
from optimizers.knobs.search import MAX_SLOWDOWN, sobol


@dataclass
class Node:
    idx: np.ndarray
    depth: int
    classifier: object | None = None
    good_label: int = 0
    children: list["Node"] = field(default_factory=list)  # [good, bad]

    @property
    def leaf(self) -> bool:
        return not self.children


def build_tree(X: np.ndarray, y: np.ndarray, max_depth: int, min_leaf: int, seed: int = 0) -> Node:
    """Partition the samples: y is minimized."""
    from sklearn.cluster import KMeans
    from sklearn.svm import SVC

    spread = y.std() or 1.0
    weight = math.sqrt(X.shape[1])  # so performance, one column, counts as much as the configuration
    root = Node(np.arange(len(y)), 0)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.depth >= max_depth or len(node.idx) < 2 * min_leaf:
            continue
        feats = np.c_[X[node.idx], weight * (y[node.idx] - y[node.idx].mean()) / spread]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = KMeans(2, n_init=2, random_state=seed).fit_predict(feats)
        if len(set(labels)) < 2:
            continue
        svm = SVC(kernel="rbf", gamma="scale", C=10.0).fit(X[node.idx], labels)
        routed = svm.predict(X[node.idx])
        if min(np.sum(routed == 0), np.sum(routed == 1)) < max(1, min_leaf // 2):
            continue
        means = [y[node.idx][routed == k].mean() for k in (0, 1)]
        good = int(np.argmin(means))
        node.classifier, node.good_label = svm, good
        node.children = [Node(node.idx[routed == good], node.depth + 1), Node(node.idx[routed != good], node.depth + 1)]
        stack.extend(node.children)
    return root


def leaves(node: Node) -> list[Node]:
    return [node] if node.leaf else [leaf for c in node.children for leaf in leaves(c)]


def route(node: Node, points: np.ndarray) -> np.ndarray:
    """The leaf number (in ``leaves`` order) of each point."""
    out = np.zeros(len(points), dtype=int)
    numbering = {id(leaf): i for i, leaf in enumerate(leaves(node))}

    def walk(n: Node, rows: np.ndarray) -> None:
        if not len(rows):
            return
        if n.leaf:
            out[rows] = numbering[id(n)]
            return
        pred = n.classifier.predict(points[rows])  # type: ignore[union-attr]
        walk(n.children[0], rows[pred == n.good_label])
        walk(n.children[1], rows[pred != n.good_label])

    walk(node, np.arange(len(points)))
    return out


def leaf_weights(root: Node, y: np.ndarray, cp: float, temperature: float = 0.1) -> np.ndarray:
    """Softmax of each leaf's UCT score (mean performance scaled to [0, 1], higher better, + exploration)."""
    lo, hi = y.min(), y.max()
    perf = 1.0 - (y - lo) / (hi - lo) if hi > lo else np.ones_like(y)
    total = len(y)
    scores = np.array([perf[leaf.idx].mean() + cp * math.sqrt(2 * math.log(max(total, 2)) / len(leaf.idx))
                       for leaf in leaves(root)])
    w = np.exp((scores - scores.max()) / temperature)
    return w / w.max()


def sparse_moves(x: np.ndarray, n: int, rng: np.random.Generator, most: int = 3) -> np.ndarray:
    """``n`` copies of ``x`` with 1 to ``most`` coordinates each redrawn uniformly."""
    out = np.repeat(x[None, :], n, axis=0)
    for row in out:
        picked = rng.choice(len(x), size=min(int(rng.integers(1, most + 1)), len(x)), replace=False)
        row[picked] = rng.random(len(picked))
    return out


class HiBOSpaceSearch(ModelSearch):
    name = "hibo"
    description = "HiBO: search-tree partitioning (k-means + SVM, UCT) weighting a local GP's qLogEI"

    def _setup(self, max_depth: int = 4, min_leaf: int = 4, cp: float = 0.3, patience: int = 6, sweep: int = 1024,
               local: int = 768, sparse: int = 768, constrained: bool = True,
               max_slowdown: float = MAX_SLOWDOWN) -> None:
        super()._setup(constrained=constrained, max_slowdown=max_slowdown)
        self.max_depth, self.min_leaf, self.cp, self.patience = max_depth, min_leaf, cp, patience
        self.sweep, self.local, self.sparse = sweep, local, sparse
        self.last_tree: Node | None = None

    def depth_and_cp(self) -> tuple[int, float]:
        """Depth from the data, cut by one (and exploration doubled) after ``patience`` trials without a new best."""
        n = len(self.history)
        depth = min(self.max_depth, max(1, int(math.log2(max(n / (2 * self.min_leaf), 1))) + 1))
        usable = self.feasible_mask() if self.constrained else ~np.array([o.failed for o in self.history])
        ok = [o.objective if good else math.inf for o, good in zip(self.history, usable, strict=True)]
        if n > self.patience and min(ok[:-self.patience]) <= min(ok[-self.patience:]):
            return max(1, depth - 1), self.cp * 2
        return depth, self.cp

    def _ask_one(self, current, pending):
        start = self.initial_point(pending)
        if start is not None:
            return start
        d = self.space.dim
        X, y = self.data()
        depth, cp = self.depth_and_cp()
        ranked = y
        if self.models_constraint():  # for the tree and the trust region, a regressing trial is as bad as the worst
            feasible = self.feasible_mask()
            ranked = np.where(feasible, y, y.max())
        root = build_tree(X, ranked, depth, self.min_leaf, self.seed)
        self.last_tree = root
        weights = leaf_weights(root, ranked, cp)
        rng = self.rng()
        best = X[np.argsort(ranked, kind="stable")[:3]]
        steps = [np.clip(b + rng.normal(0, 0.08, size=(self.local // len(best), d)), 0, 1) for b in best]
        candidates = np.vstack([sobol(d, self.sweep, self.seed + len(self.history)), *steps,
                                *(sparse_moves(b, self.sparse // len(best), rng) for b in best)])
        acq = self.acquisition(X, y, pending)

        def value(points: np.ndarray) -> np.ndarray:
            return score(acq, points) + np.log(weights[route(root, points)])

        values = value(candidates)
        for p in pending:  # a batch spreads out: no two points of one batch in the same spot
            values[np.linalg.norm(candidates - p, axis=1) < 0.05] = -np.inf
        i = int(np.argmax(values))
        return prefer_no_restart(candidates[i], float(values[i]), current, self.space.restart_mask(),
                                 lambda p: float(value(p[None, :])[0]))


class HiBO(KnobOptimizer, HiBOSpaceSearch):
    """HiBO over a knob space."""
