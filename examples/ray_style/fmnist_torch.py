"""Ray Tune's PyTorch pattern under tune: a function trainable that builds a model, trains
an epoch, evaluates, and reports the accuracy with a checkpoint (a temporary folder,
Checkpoint.from_directory), resuming from train.get_checkpoint(); ASHA on the accuracy.
A small MLP on a slice of Fashion-MNIST (2,000 training and 1,000 test images, read from
the dataset's own files), so it takes seconds on a CPU. Only the imports differ from a
Ray script."""

import argparse
import gzip
import os
import tempfile

import torch
import torch.nn as nn

from tune import train
import tune
from tune.schedulers import ASHAScheduler

DATA = os.environ.get("FMNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load(kind, n):
    """The first n images (floats in [0, 1], flattened) and labels of the idx files."""
    with gzip.open(os.path.join(DATA, f"{kind}-images-idx3-ubyte.gz")) as f:
        f.read(16)
        x = torch.frombuffer(bytearray(f.read(n * 784)), dtype=torch.uint8)
    with gzip.open(os.path.join(DATA, f"{kind}-labels-idx1-ubyte.gz")) as f:
        f.read(8)
        y = torch.frombuffer(bytearray(f.read(n)), dtype=torch.uint8)
    return x.float().view(n, 784) / 255.0, y.long()


def train_fmnist(config):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = load("train", 2000)
    xt, yt = load("t10k", 1000)
    model = nn.Sequential(nn.Linear(784, config["hidden"]), nn.ReLU(),
                          nn.Linear(config["hidden"], 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    start = 1
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "model.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
    for epoch in range(start, config["epochs"] + 1):
        model.train()
        for i in range(0, len(x), config["batch_size"]):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[i:i + config["batch_size"]]),
                                               y[i:i + config["batch_size"]])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(xt).argmax(1) == yt).float().mean().item()
        with tempfile.TemporaryDirectory() as d:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "epoch": epoch}, os.path.join(d, "model.pt"))
            train.report({"mean_accuracy": accuracy, "loss": loss.item()},
                         checkpoint=train.Checkpoint.from_directory(d))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="finish quickly")
    args, _ = parser.parse_known_args()

    tuner = tune.Tuner(
        train_fmnist,
        param_space={
            "lr": tune.loguniform(1e-3, 0.3),
            "hidden": tune.choice([32, 64]),
            "batch_size": tune.choice([32, 64]),
            "epochs": 3,
        },
        tune_config=tune.TuneConfig(
            metric="mean_accuracy", mode="max", num_samples=4 if args.smoke_test else 8,
            seed=5, scheduler=ASHAScheduler(max_t=3, grace_period=1, reduction_factor=2),
        ),
        run_config=train.RunConfig(name="fmnist_torch"),
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("Best hyperparameters found were:", best.config)
    print("Best accuracy:", best.metrics["mean_accuracy"])
