"""Runs a function trainable in a trial's own process: python -m tune.trial TARGET [--path DIR].

TARGET is MODULE:FUNCTION (imported, with DIR put first on sys.path) or FILE.py:FUNCTION
(the file is loaded as a module named __tune_main__, so its `if __name__ == "__main__":`
block does not run). A script that calls tune.run (or Tuner.fit) at its top level, unguarded
as Ray's examples are, is loaded up to that call: tune.run raises ScriptReachedRun while the
module loads, the functions defined above it are there, and the code after it never runs
in a trial. The function gets the trial's configuration from TUNE_CONFIG and
reports with tune.report; a dict it returns is reported as its last result, as in Ray.

Results go only through tune.report: before the user's module is imported, the trial's
stdout (the pipe tune reads results from) is kept on a private descriptor for
tune_report's lines, and descriptor 1 is pointed at stderr, so that whatever else the
function prints (print(json.dumps(config)) included, and the output of subprocesses and C
extensions) goes to the trial's stderr.log as a log, never taken for a result. A command
trial (any program printing JSON lines) is untouched: there every JSON line on stdout is a
result (README, "Trials").

Not for: anything tune itself does (scheduling, recording); an exception ends the trial
with its traceback on stderr and exit status 1, which tune records as ERROR.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys

import tune_report


def keep_stdout_for_results():
    """From here on only tune_report writes to the trial's stdout (a descriptor of its own);
    fd 1, and with it print(), subprocesses and C extensions, writes to stderr."""
    sys.stdout.flush()
    results = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)  # not inherited
    os.dup2(2, 1)  # inherited: a subprocess's stdout is the log too
    try:
        sys.stdout.reconfigure(line_buffering=True)  # prints reach the log as they happen
    except AttributeError:
        pass
    tune_report._results_to(results)


def _exec(load_module):
    """Runs load_module(), stopping quietly where the script reaches tune.run (an unguarded
    script); a tune.run anywhere else in a trial, the function's own included, is refused."""
    from tune._run import ScriptReachedRun
    os.environ["TUNE_PYTHON_TRIAL"] = "loading"
    try:
        return load_module()
    except ScriptReachedRun:
        return None
    finally:
        os.environ["TUNE_PYTHON_TRIAL"] = "1"


def load(target):
    """The function TARGET names."""
    where, sep, qualname = target.rpartition(":")
    if not sep or not where or not qualname:
        raise SystemExit(f"tune.trial: {target!r} is not MODULE:FUNCTION or FILE.py:FUNCTION")
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.exists(path):
            raise SystemExit(f"tune.trial: {path} does not exist (the script that defined the "
                             "function was moved or deleted)")
        sys.path.insert(0, os.path.dirname(path))  # as when the script itself runs
        spec = importlib.util.spec_from_file_location("__tune_main__", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["__tune_main__"] = module
        _exec(lambda: spec.loader.exec_module(module))
    else:
        module = sys.modules.get(where)
        if module is None:
            # by hand, not import_module: a module that stops at tune.run is kept, partly
            # made, where an import that raises would drop it
            spec = importlib.util.find_spec(where)
            if spec is None:
                raise SystemExit(f"tune.trial: no module named {where!r} (the folder it was "
                                 "imported from was moved, or --path is missing)")
            module = importlib.util.module_from_spec(spec)
            sys.modules[where] = module
            _exec(lambda: spec.loader.exec_module(module))
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise SystemExit(f"tune.trial: {where} has no {qualname}")
    if not callable(obj):
        raise SystemExit(f"tune.trial: {where}:{qualname} is not a function")
    return obj


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tune.trial",
                                 description="Runs a function trainable as one tune trial.")
    ap.add_argument("target", help="MODULE:FUNCTION or FILE.py:FUNCTION")
    ap.add_argument("--path", action="append", default=[],
                    help="a folder to import from (put first on sys.path)")
    a = ap.parse_args(argv)
    for p in reversed(a.path):
        sys.path.insert(0, p)
    os.environ["TUNE_PYTHON_TRIAL"] = "1"  # tune.run refuses to nest inside a trial
    raw = os.environ.get("TUNE_CONFIG")
    if raw is None and os.environ.get("TUNE_CONFIG_FILE"):
        # a configuration too long for one environment string (over 128 KiB): tune wrote it
        # to the trial's folder instead
        with open(os.environ["TUNE_CONFIG_FILE"], encoding="utf-8") as f:
            raw = f.read()
    if raw is None:
        raise SystemExit("tune.trial: TUNE_CONFIG is not set: this runs as one of tune's trials "
                         "(tune.run or `tune run`), which sets it")
    config = json.loads(raw)
    keep_stdout_for_results()
    fn = load(a.target)
    result = fn(config)
    if isinstance(result, dict):
        import tune
        tune.report(**result)
    elif result is not None:
        raise SystemExit(f"tune.trial: {a.target} returned {type(result).__name__}; a trainable "
                         "returns None or a dict of final metrics")


if __name__ == "__main__":
    main()
