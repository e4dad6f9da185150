#!/usr/bin/python3
"""Fashion-MNIST with PyTorch DistributedDataParallel, run as a tune trial.

tune starts this script (command[0] in space.json, found on PATH) with the trial's
hyperparameters as arguments. Not yet under torchrun, it replaces itself with torchrun on
N ranks, using the rendezvous address tune gave the trial: MASTER_ADDR and MASTER_PORT,
a port no other running trial has (a command in space.json is never given to a shell, so
the script reads them itself). Each rank then trains the usual way: init_process_group
(gloo on CPU, NCCL on GPUs), a DistributedSampler with set_epoch every epoch,
DistributedDataParallel; rank 0 reports each evaluation with tune_report.report.

Checkpoints, as Population Based Training needs them: at each epoch's end rank 0 saves the
model and the optimizer (momentum buffers) atomically into TUNE_CHECKPOINT_DIR (else
TUNE_TRIAL_DIR), one file per epoch, and the epoch's last result names it. Started with
TUNE_RESUME_FROM, every rank loads that checkpoint, then sets the optimizer's lr and
momentum to the ones on the command line: optimizer.load_state_dict restores the
checkpoint's own, which is what a PBT clone with a perturbed configuration must not keep.
The first result after a resume says what changed.

The data are the IDX files of Debian's dataset-fashion-mnist package, read with gzip and
numpy (no download). Not for: benchmarks (a small MLP on a subset, to finish quickly).
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from tune_report import report  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=64, help="global batch, split over ranks")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--evals-per-epoch", type=int, default=2,
                   help="results per epoch (training_iteration counts them)")
    p.add_argument("--train-size", type=int, default=6000, help="first N training images")
    p.add_argument("--test-size", type=int, default=2000, help="first N test images")
    p.add_argument("--nproc", type=int, default=2, help="ranks on CPU (on GPUs: TUNE_NUM_GPUS)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=os.environ.get("FASHION_MNIST_DIR",
                                                    "/usr/share/datasets/fashion-mnist"))
    return p.parse_args()


def launch(args):
    """Becomes torchrun on this script, with tune's rendezvous address."""
    gpus = int(os.environ.get("TUNE_NUM_GPUS") or 0)
    nproc = gpus if gpus > 0 else args.nproc
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
           "--nproc_per_node", str(nproc),
           # Debian's torch 1.13 under Python 3.11: torchrun crashes before starting any
           # rank unless the ranks' stderr is redirected and teed (ranks' stdout is not
           # touched, so rank 0's result lines reach tune unchanged).
           "--redirects", "2", "--tee", "2",
           "--master_addr", os.environ.get("MASTER_ADDR", "127.0.0.1"),
           "--master_port", os.environ.get("MASTER_PORT", "29500")]
    if os.environ.get("TUNE_TRIAL_DIR"):
        cmd += ["--log_dir", os.path.join(os.environ["TUNE_TRIAL_DIR"], "torchrun")]
    cmd += [os.path.realpath(__file__)] + sys.argv[1:]
    sys.stdout.flush()
    os.execv(sys.executable, cmd)


def load_idx(path):
    """An IDX file (the MNIST format): big-endian dims after a magic number, then uint8."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, split, n):
    x = load_idx(os.path.join(data_dir, split + "-images-idx3-ubyte.gz"))[:n]
    y = load_idx(os.path.join(data_dir, split + "-labels-idx1-ubyte.gz"))[:n]
    x = (x.reshape(len(x), -1).astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return x, y.astype(np.int64)


def checkpoint_dir():
    """Where checkpoints go: tune's checkpoint folder, else the trial's, else none."""
    return os.environ.get("TUNE_CHECKPOINT_DIR") or os.environ.get("TUNE_TRIAL_DIR") or None


def save_checkpoint(torch, path, state):
    """Saves completely, then renames: a kill leaves the old file or the new, never half."""
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def apply_config(opt, args):
    """The command line's hyperparameters on every param group; returns what changed
    against the checkpoint's as {"name": [old, new]}."""
    changed = {}
    for g in opt.param_groups:
        for key, new in (("lr", args.lr), ("momentum", args.momentum)):
            if g[key] != new:
                changed[key] = [g[key], new]
            g[key] = new
    return changed


def main():
    args = parse_args()
    if "LOCAL_RANK" not in os.environ:
        return launch(args)

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available() and int(os.environ.get("TUNE_NUM_GPUS") or 0) > 0
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if use_cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        # tune gives the trial cpus_per_trial threads (OMP_NUM_THREADS): share them out.
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS") or 1) // world))
    torch.manual_seed(args.seed)

    xtr, ytr = load(args.data, "train", args.train_size)
    xte, yte = load(args.data, "t10k", args.test_size)
    train = TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    test = TensorDataset(torch.from_numpy(xte), torch.from_numpy(yte))
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    per_rank = max(1, args.batch_size // world)
    loader = DataLoader(train, batch_size=per_rank, sampler=sampler, drop_last=True)
    test_loader = DataLoader(test, batch_size=512,
                             sampler=DistributedSampler(test, num_replicas=world, rank=rank,
                                                        shuffle=False))

    model = nn.Sequential(nn.Linear(784, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10)).to(device)
    resume = os.environ.get("TUNE_RESUME_FROM")
    state = torch.load(resume, map_location=device) if resume else None
    if state:  # before DDP wraps it: DDP broadcasts rank 0's parameters at construction
        model.load_state_dict(state["model"])
    model = DDP(model, device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    first_epoch, iteration, resumed = 0, 0, None
    if state:
        opt.load_state_dict(state["optimizer"])  # the momentum buffers, and the old lr ...
        changed = apply_config(opt, args)  # ... which the command line's replaces
        first_epoch, iteration = state["epoch"], state["iteration"]
        resumed = {"from": resume, "epoch": first_epoch, "changed": changed}
        if rank == 0:
            print(f"resumed from {resume} after epoch {first_epoch}; changed: "
                  f"{changed or 'nothing'}", file=sys.stderr, flush=True)
    ckdir = checkpoint_dir()
    if ckdir and rank == 0:
        os.makedirs(ckdir, exist_ok=True)

    def evaluate():
        model.eval()
        sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss, correct, count
        with torch.no_grad():
            for x, y in test_loader:
                x, y = x.to(device), y.to(device)
                out = model(x)
                sums[0] += F.cross_entropy(out, y, reduction="sum").item()
                sums[1] += (out.argmax(1) == y).sum().item()
                sums[2] += len(y)
        dist.all_reduce(sums)  # every rank's shard of the test set
        model.train()
        return (sums[0] / sums[2]).item(), (sums[1] / sums[2]).item()

    steps = len(loader)
    # evaluations at evenly spaced steps, the last at the epoch's last step, so that the
    # epoch's checkpoint holds exactly the state its last result describes
    evals = min(steps, args.evals_per_epoch)
    eval_at = {round(k * steps / evals) for k in range(1, evals + 1)}
    seen, t0 = 0, time.time()
    for epoch in range(first_epoch, args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        run_loss, run_n = 0.0, 0
        for step, (x, y) in enumerate(loader, 1):
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            opt.step()
            run_loss += loss.item()
            run_n += 1
            seen += len(y) * world
            if step in eval_at:
                iteration += 1
                val_loss, acc = evaluate()
                extra = {}
                if step == steps and ckdir and rank == 0:
                    path = os.path.join(ckdir, f"checkpoint_{iteration:06d}.pt")
                    save_checkpoint(torch, path, {
                        "model": model.module.state_dict(), "optimizer": opt.state_dict(),
                        "epoch": epoch + 1, "iteration": iteration})
                    extra["checkpoint"] = path
                if resumed:
                    extra["resumed"], resumed = resumed, None
                report(training_iteration=iteration, epoch=epoch + step / steps,
                       loss=val_loss, accuracy=acc, train_loss=run_loss / max(1, run_n),
                       samples_per_s=seen / (time.time() - t0), world_size=world,
                       lr=opt.param_groups[0]["lr"], **extra)
                run_loss, run_n = 0.0, 0
    dist.destroy_process_group()
    # Everything is reported and saved. Leave without tearing down the DDP model: with
    # Debian's torch 1.13 that teardown (when main returns) can deadlock, the gloo group's
    # destructor joining its worker threads while it holds the GIL and a worker that is
    # releasing the last collective's tensors waiting for the GIL (seen once in ~20 runs
    # of tests/test_report.c's torch_ddp_example_resumes_with_new_config under load).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
