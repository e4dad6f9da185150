"""Tiny function trainables the tests run as trials (imported by name in each trial's
process, as `python -m tune.trial trainables:NAME`). Each takes well under a second."""

import os
import time

import tune


def quadratic(config):
    """loss = x / i for i = 1..5: trials with a smaller x are better at every rung."""
    for i in range(1, 6):
        time.sleep(config.get("sleep", 0))
        tune.report(loss=config["x"] / i, acc=1 - config["x"] / i, tag=str(config.get("tag")))


def fails(config):
    tune.report(loss=1.0)
    raise ValueError(f"boom {config['x']}")


def returns_dict(config):
    tune.report(loss=2.0)
    return {"loss": 1.0, "final": True}


def resumable(config):
    """Counts to 20 in 5 s, saving a checkpoint file after each step; started again it goes
    on from the checkpoint and says where it resumed (resumed_from)."""
    start, resumed = 1, 0
    ckpt = tune.get_checkpoint()
    if ckpt:
        with open(ckpt) as f:
            start = int(f.read()) + 1
        resumed = start - 1
    for i in range(start, 21):
        time.sleep(0.25)  # slow enough for the test to interrupt it mid-run
        path = os.path.join(tune.get_trial_dir(), "checkpoint")
        with open(path + ".tmp", "w") as f:
            f.write(str(i))
        os.replace(path + ".tmp", path)
        tune.report(training_iteration=i, loss=config["x"] / i, resumed_from=resumed)


def torch_regression(config):
    """A one-layer PyTorch model fitted to y = 3x - 1 by SGD; reports the loss per epoch."""
    import torch
    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 3 * x - 1
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(1, config["epochs"] + 1):
        for _ in range(10):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        tune.report(loss=loss, weight=model.weight.detach()[0, 0])  # tensors become numbers
