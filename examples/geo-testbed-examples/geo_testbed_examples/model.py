"""A small CNN with BatchNorm: two 3x3 convolutions, each followed by
BatchNorm, ReLU and max-pooling, then a linear classifier.  Its running
statistics travel with its parameters."""

from agents.models.base import Model
from agents.plugins import Option


class BatchNormCNN(Model):
    NAME = "bn-cnn"
    DESCRIPTION = "two convolutions with BatchNorm, then a linear classifier"
    OPTIONS = (Option("width", 8, "channels of the first convolution (the second has twice)",
                      low=1, high=512),)

    def build(self, in_shape, classes, seed):
        import torch
        from torch import nn
        torch.manual_seed(seed)
        c, h, w = in_shape
        k = self.options["width"]
        return nn.Sequential(
            nn.Conv2d(c, k, 3, padding=1), nn.BatchNorm2d(k), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(k, 2 * k, 3, padding=1), nn.BatchNorm2d(2 * k), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * k * (h // 4) * (w // 4), classes))
