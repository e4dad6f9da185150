#!/usr/bin/python3
"""torch_ddp.py: the PyTorch peer of tune-train for bench/train/run.sh.

Trains the same models (mlp 784-256-256-10, cnn conv5x5x32-pool-conv5x5x64-pool-fc128-fc10)
on the same Fashion-MNIST IDX files with torch.nn.parallel.DistributedDataParallel (gloo,
CPU), DistributedSampler, global batch split over ranks, SGD with momentum, and prints one
JSON line per epoch from rank 0 with the same keys as tune-train, plus first_step_s (seconds
from $BENCH_T0, the launch time, to the first training step). Ranks are started with
torch.multiprocessing.spawn (torchrun needs --redirects 2 --tee 2 on Debian's Python 3.11).
Not a test: run.sh compares its numbers with tune-train's.
"""
import argparse
import gzip
import json
import os
import sys
import struct
import time

T_IMPORT = time.time()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 0x803:
        return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, 28 * 28)
    return np.frombuffer(data, dtype=np.uint8, offset=8)


def load(data_dir):
    def t(name):
        return read_idx(os.path.join(data_dir, name))
    x = torch.from_numpy(t("train-images-idx3-ubyte.gz").copy()).float().div_(255)
    y = torch.from_numpy(t("train-labels-idx1-ubyte.gz").astype(np.int64))
    xv = torch.from_numpy(t("t10k-images-idx3-ubyte.gz").copy()).float().div_(255)
    yv = torch.from_numpy(t("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    x.sub_(0.2860).div_(0.3530)
    xv.sub_(0.2860).div_(0.3530)
    return x, y, xv, yv


class MLP(nn.Module):
    def __init__(self, hidden=256, layers=2):
        super().__init__()
        dims = [784] + [hidden] * layers
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.out = nn.Linear(dims[-1], 10)

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(1024, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def worker(rank, args, data):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    x, y, xv, yv = data
    if args.train_limit:
        x, y = x[: args.train_limit], y[: args.train_limit]
    model = MLP() if args.model == "mlp" else CNN()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    local = args.batch_size // args.ranks
    ds = torch.utils.data.TensorDataset(x, y)
    sampler = torch.utils.data.distributed.DistributedSampler(
        ds, num_replicas=args.ranks, rank=rank, shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(ds, batch_size=local, sampler=sampler)
    t_start = float(os.environ.get("BENCH_T0", T_IMPORT))
    first = None
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch - 1)
        ddp.train()
        t0, seen, loss_sum = time.time(), 0, 0.0
        for xb, yb in loader:
            if first is None:
                first = time.time() - t_start
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()
            opt.step()
            seen += len(xb)
            loss_sum += loss.item() * len(xb)
        train_time = time.time() - t0
        ddp.eval()
        with torch.no_grad():
            out = model(xv)
            vloss = F.cross_entropy(out, yv).item()
            acc = (out.argmax(1) == yv).float().mean().item()
        stats = torch.tensor([loss_sum, float(seen)])
        dist.all_reduce(stats)
        if rank == 0:
            print(json.dumps({"training_iteration": epoch, "epoch": epoch,
                              "train_loss": stats[0].item() / stats[1].item(),
                              "val_loss": vloss, "val_accuracy": acc,
                              "samples_per_s": stats[1].item() / train_time,
                              "time_s": time.time() - t_start, "first_step_s": first}),
                  flush=True)
    dist.destroy_process_group()
    # As examples/torch_ddp/ddp_fmnist.py: with Debian's torch 1.13 tearing down the DDP
    # model after this can deadlock (the gloo group's destructor joins its worker threads
    # holding the GIL); the results are printed, so leave without it.
    sys.stdout.flush()
    os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--port", type=int, default=29511)
    args = p.parse_args()
    data = load(args.data)
    mp.spawn(worker, args=(args, data), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
