"""The function of docs/python.md's first block, importable by name, for the blocks of that
document that go on from it (the Tuner, the readers): tests/python/test_docs.py's hidden
`before` code imports it. Not for: anything else."""
import math

import tune


def train_one_epoch(lr, batch_size, epoch):
    """A stand-in for a real epoch: the loss falls with the epochs, least near lr = 0.01."""
    loss = 0.3 + abs(math.log10(lr / 0.01)) / 4 + 1 / epoch + batch_size / 1e4
    return loss, 1 - loss / 3


def train(config):
    for epoch in range(1, 28):
        loss, acc = train_one_epoch(config["lr"], config["batch_size"], epoch)
        tune.report(val_loss=loss, val_accuracy=acc)
