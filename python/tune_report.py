"""tune_report: report a result to tune from a Python trial. Standard library only.

    from tune_report import report

    for epoch in range(1, epochs + 1):
        loss = train_one_epoch()
        report(training_iteration=epoch, loss=loss)

Each call writes one JSON object on one line and flushes it, which is all tune reads: every
stdout line of a command trial that is a JSON object is a result (README, "Trials"); in a
function trainable (python -m tune.trial) the line goes to the stream tune.trial kept for
results, and the function's own prints are logs. NaN and infinities are written as null, so
the line is strict JSON (tune records a missing metric; it would also accept Python's NaN
tokens). Numbers from numpy or torch (anything with .item() or __float__) become plain
numbers. Under torchrun or any launcher that sets RANK, only rank 0 writes, so a DDP script
may call report() on every rank.

A checkpoint reported from outside the trial's own folder (TUNE_TRIAL_DIR) is copied into
its checkpoint folder (TUNE_CHECKPOINT_DIR) first, as Ray Tune does, and the copy is what the result names: Ray's
`with tempfile.TemporaryDirectory() as d: save(d); report(..., checkpoint=d)` works, and
what was reported is what a resumed trial or a PBT clone gets (docs/pbt.md).

Not for: reading anything back from tune; the trial's configuration is in its arguments
and in the TUNE_CONFIG environment variable (JSON).
"""

import errno
import json
import math
import os
import re
import shutil
import sys

__all__ = ["report"]

# Where result lines go: None for sys.stdout (a command trial), or the stream tune.trial
# kept for them when it moved the function's own stdout to the log (_results_to).
_results = None


def _results_to(stream):
    """tune.trial's hook: result lines go to `stream` (a text file flushed per line) from now
    on; None: back to sys.stdout."""
    global _results
    _results = stream


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


_COPY = re.compile(r"checkpoint_(\d{6,})$")
_PARTIAL = re.compile(r"\.(checkpoint_\d{6,})\.partial-(\d+)$")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _keep(src, folder):
    """Copies checkpoint src (a file or a folder) into folder as checkpoint_NNNNNN, the next
    number: made under a temporary name and renamed into place whole, so that a kill never
    leaves half a checkpoint under the real name. Its path."""
    if not os.path.lexists(src):
        raise FileNotFoundError(errno.ENOENT, "tune_report.report: the checkpoint reported is not "
                                "there; save it completely, then report it", src)
    names = os.listdir(folder)
    for n in names:  # what a copy cut short by a kill left (never a live process's)
        m = _PARTIAL.match(n)
        if m and int(m.group(2)) != os.getpid() and not _alive(int(m.group(2))):
            _remove(os.path.join(folder, n))
    k = max((int(m.group(1)) for m in map(_COPY.match, names) if m), default=0)
    while True:
        k += 1
        name = f"checkpoint_{k:06d}"
        dst = os.path.join(folder, name)
        if os.path.lexists(dst):
            continue
        tmp = os.path.join(folder, f".{name}.partial-{os.getpid()}")
        _remove(tmp)
        is_dir = os.path.isdir(src)
        if is_dir:
            shutil.copytree(src, tmp, symlinks=True)
        else:
            shutil.copy2(src, tmp)
        try:
            if is_dir:
                os.rename(tmp, dst)  # refused onto anything but an empty folder
            else:
                os.link(tmp, dst)  # never over a file saved meanwhile
                os.unlink(tmp)
        except OSError as e:  # the name was taken meanwhile: the next one
            _remove(tmp)
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
            continue
        return dst


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _checkpoint(path):
    """The checkpoint path a result names: path itself when it lies in the trial's own folder
    (TUNE_TRIAL_DIR, which holds TUNE_CHECKPOINT_DIR) or there is none (outside tune), else
    a copy made in TUNE_CHECKPOINT_DIR. Files the trial keeps in its folder are its own,
    trimmed by keep_checkpoints under PBT; only what would vanish or lies elsewhere (a
    temporary folder, a shared disk) is copied, so that reporting a checkpoint.pt saved
    again each epoch never fills the disk with copies under a scheduler that keeps all."""
    folder = os.environ.get("TUNE_CHECKPOINT_DIR")
    if not folder or not os.path.isdir(folder):
        return path
    real, home = os.path.realpath(path), os.path.realpath(folder)
    if real == home:
        # a copy of it would hold every earlier copy, and the next one this one
        raise ValueError(f"tune_report.report: checkpoint={path!r} is the trial's checkpoint "
                         "folder itself (TUNE_CHECKPOINT_DIR); save each checkpoint in a file "
                         "or folder of its own, inside it or anywhere else (tune copies it in)")
    trial = os.environ.get("TUNE_TRIAL_DIR")
    own = os.path.realpath(trial) if trial and os.path.isdir(trial) else home
    if os.path.commonpath([real, own]) == own or os.path.commonpath([real, home]) == home:
        return path
    return _keep(os.path.abspath(path), folder)


def report(checkpoint=None, **metrics):
    """Writes one result line, e.g. report(training_iteration=3, loss=0.41, accuracy=0.86).

    checkpoint: the path (str or os.PathLike) of the file or folder saved for this result,
    saved completely before it is reported. One inside the trial's checkpoint folder
    (TUNE_CHECKPOINT_DIR) is named as it is (write it under a temporary name and
    os.replace() it, so that a kill never leaves half a checkpoint under the real name);
    one elsewhere in the trial's folder (TUNE_TRIAL_DIR) is named as it is too; one anywhere
    else (a temporary folder) is copied into TUNE_CHECKPOINT_DIR first as
    checkpoint_NNNNNN and the copy is named, so that it may be deleted or rewritten once
    this returns. The result's "checkpoint" key; a trial started again after a failure, a
    pause or a PBT exploit finds its checkpoint in TUNE_RESUME_FROM
    (examples/torch_resumable/).

    Returns True when the line was written, False on a rank other than 0.
    """
    if os.environ.get("RANK", "0") != "0":
        return False
    if checkpoint is not None:
        metrics["checkpoint"] = _checkpoint(os.fspath(checkpoint))
    line = json.dumps({k: _clean(v) for k, v in metrics.items()},
                      allow_nan=False, separators=(", ", ": "))
    out = _results if _results is not None else sys.stdout
    out.write(line + "\n")
    out.flush()
    return True
