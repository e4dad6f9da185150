"""tune.Checkpoint: Ray Tune 2's checkpoint handle, over a path the trial saved.

A checkpoint is a folder (or a file) on the local disk; this object only names it: it is
its absolute path (a str subclass), so code that used tune.get_checkpoint()'s value as a
path (torch.load(ckpt), open(ckpt), os.path.join(ckpt, "model.pt")) keeps working. Not for: copying or deleting anything
itself, except to_directory(), which copies on request; what tune keeps of a reported
checkpoint is tune_report's and the engine's business (docs/pbt.md).
"""

import contextlib
import os
import shutil
import tempfile

__all__ = ["Checkpoint"]


class Checkpoint(str):
    """A checkpoint: Checkpoint.from_directory(path), .path, .as_directory(), .to_directory().

    tune.report(..., checkpoint=Checkpoint.from_directory(d)) reports it (its path goes to
    tune_report.report, which keeps a copy in the trial's folder: a temporary folder may
    go away once reported); tune.get_checkpoint() returns one (or None); Result.checkpoint
    is a trial's latest. It is the absolute path itself (a str), not only os.PathLike:
    torch.load, for one, takes a str or a pathlib.Path and nothing else, and code written
    for tune.get_checkpoint()'s path must keep working."""

    def __new__(cls, path):
        path = os.fspath(path)
        if not isinstance(path, str) or not path:
            raise TypeError(f"tune.Checkpoint: give the path of a folder, not {path!r}")
        return super().__new__(cls, os.path.abspath(path))

    @property
    def path(self):
        """The checkpoint's absolute path, a plain str."""
        return str.__str__(self)

    @classmethod
    def from_directory(cls, path):
        """The checkpoint saved in the folder path (as Ray's); the folder must exist."""
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"tune.Checkpoint.from_directory: {path!r} is not a folder"
                                    " (save the checkpoint's files into it first)")
        return cls(path)

    @classmethod
    def from_dict(cls, *a, **k):
        raise TypeError("tune.Checkpoint.from_dict is not supported (Ray 2.7 removed it too): "
                        "save the state into a folder (e.g. torch.save(state, "
                        "os.path.join(d, 'model.pt')) in a tempfile.TemporaryDirectory() d) and "
                        "report tune.Checkpoint.from_directory(d)")

    def to_dict(self):
        raise TypeError("tune.Checkpoint.to_dict is not supported: the checkpoint is a folder; "
                        "read its files with `with ckpt.as_directory() as d: ...`")

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"tune.Checkpoint({self.path!r})"

    def __reduce__(self):
        return (Checkpoint, (self.path,))

    @contextlib.contextmanager
    def as_directory(self):
        """`with ckpt.as_directory() as d:` the checkpoint's folder, as a str. It is the
        folder itself, not a copy (it is on the local disk already): read it, don't change
        it. A checkpoint saved as one file is refused, naming the file to open instead."""
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"checkpoint {self.path} no longer exists: it was removed "
                                    "after it was reported (a temporary folder, when this tune "
                                    "does not copy reported checkpoints), or deleted by "
                                    "keep_checkpoints (docs/pbt.md)")
        if not os.path.isdir(self.path):
            raise NotADirectoryError(f"checkpoint {self.path} is a file, not a folder: open it "
                                     "directly (open(ckpt), torch.load(ckpt)); as_directory() "
                                     "is for a checkpoint reported as a folder")
        yield self.path

    def to_directory(self, path=None):
        """Copies the checkpoint's folder to path (a new temporary folder when left out) and
        returns that folder's path, as Ray's."""
        with self.as_directory() as src:
            if path is None:
                path = tempfile.mkdtemp(prefix="tune_checkpoint_")
            path = os.fspath(path)
            shutil.copytree(src, path, dirs_exist_ok=True)
        return path


def from_env():
    """The checkpoint this attempt resumes from (TUNE_RESUME_FROM, relative to the trial's
    folder unless absolute), or None on a first attempt."""
    p = os.environ.get("TUNE_RESUME_FROM")
    if not p:
        return None
    if not os.path.isabs(p) and os.environ.get("TUNE_TRIAL_DIR"):
        p = os.path.join(os.environ["TUNE_TRIAL_DIR"], p)
    return Checkpoint(p)
