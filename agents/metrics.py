"""The contract of a metric: a number a worker's evaluation logs beside the
test accuracy and loss, from the model's outputs on the test set.

A metric is a subclass of `Metric` named in topo.yaml's
`experiment.metrics` list (a built-in name, an entry point of the group
`geo_testbed.metric`, or `module:Class`); its value appears in every
`eval` event under its name and in the report's evaluations.
"""

import abc

from agents.plugins import Registry


class Metric(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()

    @abc.abstractmethod
    def __call__(self, outputs, targets):
        """A float from the model's outputs (a torch tensor, one row per
        test sample) and the true labels (an int64 tensor)."""


class TopK(Metric):
    NAME = "top5"
    DESCRIPTION = "the share of test samples whose label is among the model's 5 highest outputs"
    K = 5

    def __call__(self, outputs, targets):
        k = min(self.K, outputs.shape[1])
        best = outputs.topk(k, dim=1).indices
        return float((best == targets[:, None]).any(dim=1).float().mean())


class MacroF1(Metric):
    NAME = "macro-f1"
    DESCRIPTION = "the F1 score averaged over the classes, each class weighing the same"

    def __call__(self, outputs, targets):
        guess = outputs.argmax(1)
        scores = []
        for c in range(outputs.shape[1]):
            tp = float(((guess == c) & (targets == c)).sum())
            fp = float(((guess == c) & (targets != c)).sum())
            fn = float(((guess != c) & (targets == c)).sum())
            if tp + fp + fn:
                scores.append(2 * tp / (2 * tp + fp + fn))
        return sum(scores) / len(scores) if scores else 0.0


METRIC = Registry("metric", Metric, {
    "top5": "agents.metrics:TopK",
    "macro-f1": "agents.metrics:MacroF1",
})
