#!/usr/bin/python3
"""A resumable PyTorch trial: tune's checkpoint contract in one place (README, "Trials").

Each epoch it trains, saves a checkpoint ATOMICALLY (written under a temporary name, then
os.replace()d over checkpoint.pt, so a kill never leaves half a file under the real
name), and only then reports the result with report(..., checkpoint=path). When tune
starts it again (a retry after max_failures, or `tune resume` after Ctrl-C or a crash),
TUNE_RESUME_FROM names the newest checkpoint in the trial's directory: the model, the
optimizer and the epoch are loaded and training continues with the next epoch, so the
first result of the new attempt tells tune where the checkpoint was.

A tiny linear model on synthetic data keeps it fast on a CPU. --fail-once-at K fails the
first attempt at epoch K to show the resume (tests/test_loudly.c runs it).
Not for: a real model; copy the save/report/resume shape into your own script.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "python"))
from tune_report import report  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--fail-once-at", type=int, default=0)
args = p.parse_args()

trial_dir = os.environ.get("TUNE_TRIAL_DIR", ".")
ckpt = os.path.join(trial_dir, "checkpoint.pt")

torch.manual_seed(0)
x = torch.randn(256, 8)
y = x @ torch.arange(1.0, 9.0) + 0.1 * torch.randn(256)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=args.lr)

first = 1
resume = os.environ.get("TUNE_RESUME_FROM")
if resume:
    state = torch.load(resume)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    first = state["epoch"] + 1
    print(f"resuming from {resume} at epoch {first}", file=sys.stderr)

for epoch in range(first, args.epochs + 1):
    marker = os.path.join(trial_dir, "failed_once")
    if epoch == args.fail_once_at and not os.path.exists(marker):
        open(marker, "w").close()
        raise SystemExit(f"failing once at epoch {epoch}, on purpose")
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
        loss.backward()
        opt.step()
    # Save completely, then rename: the checkpoint is either the old or the new one.
    tmp = ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch}, tmp)
    os.replace(tmp, ckpt)
    report(training_iteration=epoch, loss=loss.item(), checkpoint=ckpt)

# Runs even when tune completes the trial at max_t: tune waits stop_grace_s before SIGTERM.
torch.save(model.state_dict(), os.path.join(trial_dir, "final_model.pt"))
