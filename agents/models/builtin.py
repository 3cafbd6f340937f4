"""The built-in models: two small trainable ones (an MLP and a CNN) and
the shapes of published architectures for synthetic workloads."""

from agents.models import shapes
from agents.models.base import Model
from agents.plugins import Option


class MLP(Model):
    NAME = "mlp"
    DESCRIPTION = "one hidden layer of `hidden` ReLU units"
    OPTIONS = (Option("hidden", 128, "units in the hidden layer", low=1, high=100_000),)

    def build(self, in_shape, classes, seed):
        import torch
        from torch import nn
        torch.manual_seed(seed)
        c, h, w = in_shape
        return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, self.options["hidden"]), nn.ReLU(),
                             nn.Linear(self.options["hidden"], classes))


class CNN(Model):
    NAME = "cnn"
    DESCRIPTION = "two 3x3 convolutions with max-pooling, then two linear layers"

    def build(self, in_shape, classes, seed):
        import torch
        from torch import nn
        torch.manual_seed(seed)
        c, h, w = in_shape
        return nn.Sequential(nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * (h // 4) * (w // 4), 64), nn.ReLU(),
                             nn.Linear(64, classes))


class ResNet18(Model):
    NAME = "resnet18"
    DESCRIPTION = "ResNet-18's parameter shapes (ImageNet, 11.7 M values)"

    def shapes(self):
        return shapes.resnet_shapes((2, 2, 2, 2), False)


class ResNet50(Model):
    NAME = "resnet50"
    DESCRIPTION = "ResNet-50's parameter shapes (ImageNet, 25.6 M values)"

    def shapes(self):
        return shapes.resnet_shapes((3, 4, 6, 3), True)


class VGG16(Model):
    NAME = "vgg16"
    DESCRIPTION = "VGG-16's parameter shapes (ImageNet, 138 M values)"

    def shapes(self):
        return shapes.vgg16_shapes()


class AlexNet(Model):
    NAME = "alexnet"
    DESCRIPTION = "AlexNet's parameter shapes (ImageNet, 61 M values)"

    def shapes(self):
        return shapes.alexnet_shapes()


class MobileNet(Model):
    NAME = "mobilenet"
    DESCRIPTION = "MobileNet v1's parameter shapes (ImageNet, 4.2 M values)"

    def shapes(self):
        return shapes.mobilenet_shapes()


class BertBase(Model):
    NAME = "bert-base"
    DESCRIPTION = "BERT-base's parameter shapes (110 M values)"

    def shapes(self):
        return shapes.bert_base_shapes()


class Flat(Model):
    """`flat-N`: one tensor of N values, a model of an exact size."""
    NAME = "flat"
    DESCRIPTION = "one tensor of `size` values (topo.yaml also takes flat-N)"
    OPTIONS = (Option("size", 1_000_000, "values in the tensor", low=1, high=2_000_000_000),)

    def shapes(self):
        return [("flat", (int(self.options["size"]),))]
