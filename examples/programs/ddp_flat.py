"""PyTorch DDP over gloo training a flat model: one parameter of --params
float32 values, so every step all-reduces one tensor of the model's size
(DDP never splits a parameter across its buckets) with gloo's ring
all-reduce, unmodified.  Each step waits
--compute-time (the forward pass and the rest of the backward a real model
would spend), then runs backward(), in which DDP all-reduces the gradient,
and an SGD step.  The gradient is a fixed random vector per rank and seed,
so the loss is linear and the values do not matter: the bytes do.

Launched as any DDP script (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
from the environment: torchrun or the testbed).  Where $TESTBED_METRICS is
set, rank 0 appends {"model_bytes"} and each rank one JSON line per step:
{"step", "start", "end"}, when its backward began and ended on the
monotonic clock (the emulated hosts share one kernel, so the ranks' clocks
agree), and "sync_seconds", their difference."""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Flat(nn.Module):
    """A model that is one flat tensor; its loss is linear in it."""

    def __init__(self, params):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(params))

    def forward(self, direction):
        return (self.weight * direction).sum()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--params", type=int, default=1_250_000, help="float32 values in the model")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--compute-time", type=float, default=0.1, help="seconds of compute per step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.01)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DistributedDataParallel(Flat(args.params))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    direction = torch.randn(args.params, generator=torch.Generator().manual_seed(args.seed * 1000 + rank))
    metrics = os.environ.get("TESTBED_METRICS")
    out = open(metrics, "a") if metrics else None
    if out and rank == 0:
        out.write(json.dumps({"model_bytes": args.params * 4}) + "\n")
    for step in range(args.steps):
        opt.zero_grad()
        loss = model(direction)
        time.sleep(args.compute_time)
        start = time.monotonic()
        loss.backward()                       # DDP all-reduces the gradient here
        end = time.monotonic()
        opt.step()
        if out:
            out.write(json.dumps({"step": step, "start": start, "end": end,
                                  "sync_seconds": end - start}) + "\n")
            out.flush()
    if rank == 0:
        print(f"{args.steps} steps of {args.params} float32 values on {dist.get_world_size()} ranks")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
