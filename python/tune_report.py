"""tune_report: report a result to tune from a Python trial. Standard library only.

    from tune_report import report

    for epoch in range(1, epochs + 1):
        loss = train_one_epoch()
        report(training_iteration=epoch, loss=loss)

Each call writes one JSON object on one line of stdout and flushes it, which is all tune
reads: every stdout line that is a JSON object is a result (README, "Trials"). NaN and
infinities are written as null, so the line is strict JSON (tune records a missing metric;
it would also accept Python's NaN tokens). Numbers from numpy or torch (anything with
.item() or __float__) become plain numbers. Under torchrun or any launcher that sets RANK,
only rank 0 writes, so a DDP script may call report() on every rank.

Not for: reading anything back from tune; the trial's configuration is in its arguments
and in the TUNE_CONFIG environment variable (JSON).
"""

import json
import math
import os
import sys

__all__ = ["report"]


def _clean(v):
    """A value json.dumps writes as strict JSON."""
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    item = getattr(v, "item", None)  # numpy and torch scalars, one-element tensors
    if callable(item):
        try:
            return _clean(item())
        except (TypeError, ValueError):
            pass
    try:
        return _clean(float(v))
    except (TypeError, ValueError):
        return str(v)


def report(checkpoint=None, **metrics):
    """Writes one result line, e.g. report(training_iteration=3, loss=0.41, accuracy=0.86).

    checkpoint: the path of the checkpoint saved for this result (save it completely,
    then report it: write to a temporary name and os.replace() it, so that a kill never
    leaves half a file under the real name). It is written as the result's "checkpoint"
    key; a trial started again after a failure or a resume finds its newest checkpoint
    in the TUNE_RESUME_FROM environment variable (examples/torch_resumable/).

    Returns True when the line was written, False on a rank other than 0.
    """
    if os.environ.get("RANK", "0") != "0":
        return False
    if checkpoint is not None:
        metrics["checkpoint"] = os.fspath(checkpoint)
    line = json.dumps({k: _clean(v) for k, v in metrics.items()},
                      allow_nan=False, separators=(", ", ": "))
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return True
