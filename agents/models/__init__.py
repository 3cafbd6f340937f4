"""Models and datasets, two plug-in kinds (contracts in `base`): the
built-ins are registered below by `module:Class` exactly as a user's
plug-in is named."""

from agents.models.base import Dataset, Model
from agents.plugins import Registry

MODEL = Registry("model", Model, {
    "mlp": "agents.models.builtin:MLP",
    "cnn": "agents.models.builtin:CNN",
    "resnet18": "agents.models.builtin:ResNet18",
    "resnet50": "agents.models.builtin:ResNet50",
    "vgg16": "agents.models.builtin:VGG16",
    "alexnet": "agents.models.builtin:AlexNet",
    "mobilenet": "agents.models.builtin:MobileNet",
    "bert-base": "agents.models.builtin:BertBase",
    "flat": "agents.models.builtin:Flat",
})

DATASET = Registry("dataset", Dataset, {
    "digits": "agents.models.datasets:Digits",
    "mnist": "agents.models.datasets:MNIST",
    "cifar10": "agents.models.datasets:CIFAR10",
})


def flat_size(name):
    """N of a model named `flat-N`, or None."""
    if isinstance(name, str) and name.startswith("flat-") and name[5:].isdigit() \
            and 0 < int(name[5:]) <= 2_000_000_000:
        return int(name[5:])
    return None


def model_named(name, options=None, base_dir=None):
    """The model topo.yaml names (`flat-N` included), built with its options."""
    size = flat_size(name)
    if size is not None:
        return MODEL.load("flat")[0]({**(options or {}), "size": size})
    cls, _ = MODEL.load(name, base_dir)
    return cls(options)


def dataset_named(name, options=None, base_dir=None):
    cls, _ = DATASET.load(name, base_dir)
    return cls(options)
