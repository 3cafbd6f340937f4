"""A dataset from one NumPy .npz file in `experiment.data_dir`, holding
x_train, y_train, x_test and y_test (inputs shaped (N, C, H, W) or (N, H,
W), labels whole numbers from 0)."""

import os

import numpy as np

from agents.models.base import Dataset
from agents.plugins import Option


class NpzFile(Dataset):
    NAME = "npz"
    DESCRIPTION = "x_train, y_train, x_test, y_test from one .npz file in data_dir"
    NEEDS_DIR = True
    OPTIONS = (Option("file", "data.npz", "the file's name in data_dir"),)

    def load(self, data_dir):
        with np.load(os.path.join(data_dir, self.options["file"])) as f:
            arrays = [f[k] for k in ("x_train", "y_train", "x_test", "y_test")]
        x_train, y_train, x_test, y_test = arrays
        if x_train.ndim == 3:                     # one channel
            x_train, x_test = x_train[:, None], x_test[:, None]
        return (x_train.astype(np.float32), y_train.astype(np.int64),
                x_test.astype(np.float32), y_test.astype(np.int64))
