"""tune.with_parameters and functools.partial: a trainable with objects bound to it, for
trials that are processes of their own.

The bound objects are pickled once, into a folder named by the hash of what was pickled
(tune_params/SHA/ next to the database), beside a small generated module whose one
function loads them and calls the real trainable: fn(config, **objects). tune.run then
runs that module's function like any importable one, so the trial command in space.json
stays a plain `python -m tune.trial MODULE:FUNCTION --path DIR` that `tune resume` can run
again. Not for: sharing memory between trials (each trial process loads its own copy;
Ray's object store has no counterpart here) or objects that cannot be pickled and
unpickled in another process (lambdas, classes defined in the script run as __main__):
those are refused when the trainable is made, with the reason.
"""

import functools
import hashlib
import importlib.util
import io
import os
import pickle
import pickletools
import sys

from ._run import write_atomic

__all__ = ["with_parameters", "WithParameters", "bind"]


class WithParameters:
    """What tune.with_parameters returns: fn, with args before config and kwargs after."""

    def __init__(self, fn, args, kwargs, how):
        self.fn, self.args, self.kwargs, self.how = fn, tuple(args), dict(kwargs), how
        self.__name__ = getattr(fn, "__name__", "trainable")
        self.blob = _pickle(self)

    def __call__(self, config):
        return self.fn(*self.args, config, **self.kwargs)

    def __repr__(self):
        return f"tune.with_parameters({self.fn!r}, {', '.join(self.kwargs)})"


def with_parameters(trainable, **kwargs):
    """Ray's tune.with_parameters(train, data=data): each trial calls train(config,
    data=data), with data pickled once next to the database and loaded in the trial's
    process (docs: examples/ray_style/README.md)."""
    import inspect
    if inspect.isclass(trainable):
        raise TypeError("tune.with_parameters: class trainables are not supported: write a "
                        "function train(config, **objects)")
    if not callable(trainable):
        raise TypeError(f"tune.with_parameters: give a function, not {type(trainable).__name__}")
    if isinstance(trainable, (functools.partial, WithParameters)):
        raise TypeError("tune.with_parameters: give the function itself, not a partial or "
                        "another with_parameters")
    return WithParameters(trainable, (), kwargs, "tune.with_parameters")


def _from_partial(p):
    if isinstance(p.func, WithParameters):
        raise TypeError("functools.partial of tune.with_parameters(...) is not supported: "
                        "give every object to tune.with_parameters")
    return WithParameters(p.func, p.args, p.keywords, "functools.partial")


def _main_globals(blob):
    """The names of the pickle that refer to the script run as __main__, which a trial
    process (whose __main__ is tune.trial) cannot find."""
    found, strings = [], []
    for op, arg, _ in pickletools.genops(io.BytesIO(blob)):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings.append(arg)
        elif op.name == "GLOBAL" and arg.startswith("__main__ "):
            found.append(arg.split(" ", 1)[1])
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2 and strings[-2] == "__main__":
            found.append(strings[-1])
    return found


def _pickle(w):
    where = w.how
    try:
        blob = pickle.dumps((w.args, w.kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(f"{where}: the objects given cannot be pickled ({e}); trials are "
                        "processes of their own, so what is bound to the trainable is "
                        "pickled once and loaded by each trial. Load such an object inside "
                        "the function instead") from e
    bad = _main_globals(blob)
    if bad:
        raise TypeError(f"{where}: {', '.join(sorted(set(bad)))} is defined in the script run "
                        "as __main__, which a trial's process cannot import: move it into a "
                        "module of its own (from mymodel import Net) and bind objects of it")
    return blob


def _target(fn):
    """(TARGET, DIR) of the trial command tune.run would give fn."""
    from ._run import function_command
    cmd = function_command(fn)  # refuses lambdas and nested functions, naming why
    unescape = lambda s: s.replace("{{", "{").replace("}}", "}")
    i = cmd.index("tune.trial")
    target = unescape(cmd[i + 1])
    root = unescape(cmd[cmd.index("--path") + 1]) if "--path" in cmd else None
    return target, root


_SHIM = '''"""Written by {how} (python/tune/_params.py): runs {target} with the objects
pickled in params.pkl beside this file, in the trial's own process."""

import os
import pickle
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def {name}(config):
    root = {root!r}
    if root and root not in sys.path:
        sys.path.insert(0, root)
    from tune.trial import load
    fn = load({target!r})  # first, so that the pickle finds the script's own modules
    with open(os.path.join(_HERE, "params.pkl"), "rb") as f:
        args, kwargs = pickle.load(f)
    return fn(*args, config, **kwargs)
'''


def bind(trainable, folder):
    """The trainable tune.run can run: a function of a generated module (written under
    folder/tune_params/SHA/) for a WithParameters or functools.partial, else trainable
    itself."""
    if isinstance(trainable, functools.partial):
        trainable = _from_partial(trainable)
    if not isinstance(trainable, WithParameters):
        return trainable
    target, root = _target(trainable.fn)
    name = trainable.__name__ if trainable.__name__.isidentifier() else "trainable"
    sha = hashlib.sha256(target.encode() + b"\0" + trainable.blob).hexdigest()[:16]
    modname = f"tune_params_{sha}"
    d = os.path.join(os.path.abspath(folder), "tune_params", sha)
    os.makedirs(d, exist_ok=True)
    write_atomic(os.path.join(d, "params.pkl"), trainable.blob)
    src = _SHIM.format(how=trainable.how, target=target, root=root, name=name)
    write_atomic(os.path.join(d, modname + ".py"), src)
    spec = importlib.util.spec_from_file_location(modname, os.path.join(d, modname + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return getattr(module, name)

