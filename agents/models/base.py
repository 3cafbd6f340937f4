"""The contracts of a model and of a dataset.

A model is a subclass of `Model` named in topo.yaml as `experiment.model`
(a built-in name, an entry point of the group `geo_testbed.model`, or
`module:Class`), with options under `experiment.model_options`.  It is
trainable when it builds a torch module (`build`), and every model gives
its parameters' shapes (`shapes`), which is all a synthetic workload
needs: a trainable model's shapes come from its module.

A dataset is a subclass of `Dataset` named as `experiment.dataset`,
with options under `experiment.dataset_options`; it loads arrays from a
local folder (`experiment.data_dir`) or from what ships with a package:
nothing is downloaded.
"""

import abc

from agents.plugins import settings


class Model(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()

    def __init__(self, options=None):
        self.options = settings(self.OPTIONS, options)

    @property
    def trainable(self):
        """Whether it builds a torch module (else it is shapes only)."""
        return type(self).build is not Model.build

    def build(self, in_shape, classes, seed):
        """A torch.nn.Module for inputs of `in_shape` (C, H, W) and `classes`
        outputs, its initial weights drawn with torch's seed `seed`.
        Default: none, the model is for synthetic workloads only."""
        raise TypeError(f"model {self.NAME} has shapes only: it can run a synthetic workload, "
                        "not train")

    def shapes(self):
        """[(name, shape)] of its parameters, for a synthetic workload.
        Default: those of `build` on a 3x32x32 input with 10 classes."""
        module = self.build((3, 32, 32), 10, 0)
        return [(k, tuple(p.shape)) for k, p in module.named_parameters()]


class Dataset(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()
    NEEDS_DIR = False              # read from `experiment.data_dir`

    def __init__(self, options=None):
        self.options = settings(self.OPTIONS, options)

    @abc.abstractmethod
    def load(self, data_dir):
        """(x_train, y_train, x_test, y_test): float32 inputs shaped (N, C,
        H, W) and int64 labels from 0, as numpy arrays."""

    def check(self, data_dir):
        """Why `data_dir` (an existing folder, for a NEEDS_DIR dataset) would
        not load, in one sentence, or None.  Called when topo.yaml is
        validated, so it only looks for files and reads none.  Default:
        None (the run finds out)."""
        return None
