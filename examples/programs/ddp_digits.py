"""PyTorch DDP over gloo, as any DDP script is written: it knows nothing of
the testbed.  Trains the digits MLP (scikit-learn's digits, 64 inputs, 128
hidden units, 10 classes) on each rank's shard with SGD; every step's
gradients are all-reduced by DDP (gloo's ring for CPU tensors).

Launched by torchrun, which reads RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT as the testbed sets them (examples/programs/ddp.yaml).  Where
$TESTBED_METRICS is set, each rank appends one JSON line per step (loss)
and rank 0 the test accuracy at the end."""

import argparse
import gzip
import importlib.util
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def digits():
    """(x_train, y_train, x_test, y_test) from the file scikit-learn ships."""
    spec = importlib.util.find_spec("sklearn")
    path = os.path.join(os.path.dirname(spec.origin), "datasets", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    x = torch.tensor(table[:, :-1] / 16.0, dtype=torch.float32)
    y = torch.tensor(table[:, -1], dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
    x, y = x[order], y[order]
    cut = int(len(y) * 0.8)
    return x[:cut], y[:cut], x[cut:], y[cut:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--step-time", type=float, default=0.0, help="a step lasts at least this long")
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(),
                                                  nn.Linear(args.hidden, 10)))
    x, y, x_test, y_test = digits()
    x, y = x[rank::world], y[rank::world]
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    rng = torch.Generator().manual_seed(rank)
    metrics = os.environ.get("TESTBED_METRICS")
    out = open(metrics, "a") if metrics else None
    for step in range(args.steps):
        began = time.monotonic()
        pick = torch.randint(0, len(y), (args.batch,), generator=rng)
        opt.zero_grad()
        loss = loss_fn(model(x[pick]), y[pick])
        loss.backward()                       # DDP all-reduces the gradients here
        opt.step()
        time.sleep(max(0.0, args.step_time - (time.monotonic() - began)))
        if out:
            out.write(json.dumps({"step": step, "loss": loss.item(),
                                  "step_seconds": time.monotonic() - began}) + "\n")
            out.flush()
    if rank == 0:
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"test accuracy {accuracy:.3f} after {args.steps} steps")
        if out:
            out.write(json.dumps({"accuracy": accuracy}) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
