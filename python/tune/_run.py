"""tune.run: Ray Tune's arguments in, a space.json next to the database, the `tune` binary run.

The C binary is the engine: this module writes the file, starts `tune run FILE --db DB`,
shows its live table (a terminal) or its plain status lines (a notebook), passes Ctrl-C on
as tune's, and turns a failed run into tune.TuneError with tune's own message. Not for:
sampling, scheduling or recording anything itself, and never pickling a trainable.
"""

import datetime
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

from . import _space
from ._results import ExperimentAnalysis, TuneError

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Exit statuses of tune (README): 2 bad usage or space.json, 3 trials ended in ERROR.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_TRIAL_ERRORS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def find_binary():
    """The `tune` executable: $TUNE_BIN, else build/bin/tune of the checkout this package
    lives in, else `tune` on PATH. The variable comes first so that a test or a second build
    directory can always say which binary it means."""
    env = os.environ.get("TUNE_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise TuneError(f"TUNE_BIN={env} is not an executable file")
        return env
    beside = os.path.join(os.path.dirname(PACKAGE_PARENT), "build", "bin", "tune")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("tune")
    if found:
        return found
    raise TuneError("cannot find the tune binary: build it (./scripts/setup.sh builds "
                    "build/bin/tune in the checkout), put it on PATH, or set "
                    "TUNE_BIN=/path/to/tune")


def _escape(s):
    # A command element's braces are placeholders (docs/space.md); a path keeps its own.
    return s.replace("{", "{{").replace("}", "}}")


def function_command(fn):
    """The trial command for a function trainable: [python, -m, tune.trial, TARGET, --path DIR].

    TARGET is MODULE:QUALNAME for an importable function, FILE.py:QUALNAME for one defined
    in the script being run (__main__). DIR is the folder the module is imported from, so
    the command alone (as stored in space.json) can run the trial again, e.g. for
    `tune resume` typed in a shell."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not name or "<lambda>" in name or "<locals>" in name:
        raise ValueError(f"tune.run: {fn!r} cannot run in a trial's own process: a lambda or a "
                         "function defined inside another function has no importable name; "
                         "define it at the top level of a module or script")
    modname = getattr(fn, "__module__", None)
    module = sys.modules.get(modname)
    if module is None:
        raise ValueError(f"tune.run: cannot find the module of {fn!r}")
    path = getattr(module, "__file__", None)
    spec = getattr(module, "__spec__", None)
    if modname == "__main__" and spec is not None and spec.name not in (None, "__main__"):
        modname = spec.name  # `python -m pkg.run`: importable by its own name
    if modname == "__main__":
        if not path:
            raise ValueError(
                f"tune.run: {name} is defined in a notebook or an interactive session, which "
                "another process cannot import. Put it in a .py file next to the notebook "
                "(from mytrain import train) and pass that function")
        target, root = os.path.abspath(path) + ":" + name, None
    else:
        if not path:
            raise ValueError(f"tune.run: module {modname} of {name} has no file to import from")
        root = os.path.dirname(os.path.abspath(path))
        depth = modname.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
        for _ in range(depth):
            root = os.path.dirname(root)
        target = f"{modname}:{name}"
    cmd = [sys.executable, "-m", "tune.trial", _escape(target)]
    if root and root not in _site_dirs():  # an installed module needs no --path
        cmd += ["--path", _escape(root)]
    return cmd


def _site_dirs():
    import site
    dirs = list(getattr(site, "getsitepackages", lambda: [])())
    user = getattr(site, "getusersitepackages", lambda: None)()
    return set(os.path.abspath(d) for d in dirs + ([user] if user else []))


def _default_name(trainable):
    base = getattr(trainable, "__name__", None)
    if not isinstance(base, str) and isinstance(trainable, (list, tuple)) and trainable:
        base = os.path.basename(str(trainable[0]))
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", base or "experiment").strip(".") or "experiment"
    return f"{base}_{datetime.datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"


# Ray Tune arguments tune has no counterpart for, with what to do instead.
_RAY_ONLY = {
    "local_dir": "pass storage='PATH.db': one SQLite file holds the results, and the trial "
                 "folders go to tune_results/ next to it",
    "storage_path": "pass storage='PATH.db' (a database file, with tune_results/ beside it)",
    "checkpoint_config": "a trial saves its own checkpoint (tune.report(checkpoint=...)) and "
                         "reads it back with tune.get_checkpoint()",
    "checkpoint_freq": "a trial saves its own checkpoint; see tune.get_checkpoint()",
    "checkpoint_at_end": "a trial saves its own checkpoint; see tune.get_checkpoint()",
    "keep_checkpoints_num": "a trial saves its own checkpoint; see tune.get_checkpoint()",
    "reuse_actors": "every trial is its own process; leave it out",
    "callbacks": "read the database while it runs (tune.Experiment) instead",
    "loggers": "every result is in the database (tune.Experiment(...).results())",
    "sync_config": "trial folders are next to the database; use executor={'type': 'slurm'} "
                   "on a cluster",
    "trial_name_creator": "trials are named trial_NNNNN",
    "trial_dirname_creator": "trial folders are tune_results/NAME/trial_NNNNN",
    "restore": "use tune.resume(name, storage=...) or resume=True",
}

# Optuna's spellings of several objectives and constraints (an Optuna user's first guess),
# with tune's.
_OPTUNA_ONLY = {
    "directions": "give one mode per metric: metric=['val_loss', 'latency_ms'], "
                  "mode=['min', 'min'] (Optuna's 'minimize' is 'min', 'maximize' 'max')",
    "constraints_func": "tune cannot call a Python function (it judges results in C): report "
                        "the constrained value (tune.report(gpu_mem_gb=...)) and give its "
                        "bound as constraints={'gpu_mem_gb': {'<=': 16}} (docs/python.md, "
                        "Several objectives)",
}

_SUPPORTED = ("config", "name", "metric", "mode", "num_samples", "max_concurrent_trials", "seed",
              "scheduler", "search_alg", "resources_per_trial", "stop", "time_budget_s",
              "trial_time_limit_s", "max_failures", "fail_fast", "stop_experiment_on_target",
              "allow_missing_metric", "progress_reporter", "storage", "points_to_evaluate",
              "stop_grace_s", "status_interval_s", "result_timeout_s", "executor", "resume",
              "restart", "raise_on_failed_trial", "verbose", "gpus", "cpus", "constraints")


def _resources(r):
    if r is None:
        return None
    if not isinstance(r, dict):
        raise TypeError("resources_per_trial must be a dict like {'cpu': 2, 'gpu': 0.5} "
                        f"(placement groups are not supported), not {type(r).__name__}")
    out = {}
    for k in r:
        if k not in ("cpu", "gpu"):
            raise ValueError(f"resources_per_trial: {k!r} is not supported; tune knows 'cpu' "
                             f"and 'gpu'{_space.did_you_mean(str(k), ['cpu', 'gpu'])}")
    if "gpu" in r:
        out["gpus_per_trial"] = _space.to_json(r["gpu"], "resources_per_trial['gpu']")
    if "cpu" in r:
        out["cpus_per_trial"] = _space.to_json(r["cpu"], "resources_per_trial['cpu']")
    return out


# search_alg names to space.json's "search" (docs/search.md): random sampling from the
# seed (Ray's BasicVariantGenerator) or TPE with the Optuna or BOHB preset.
_SEARCH = {"random": None, "variant_generator": None, "basic_variant": None,
           "tpe": {"type": "tpe"}, "optuna": {"type": "tpe"},
           "bohb": {"type": "tpe", "preset": "bohb"}}


def _search(search_alg):
    if search_alg is None:
        return None
    if isinstance(search_alg, str) and search_alg in _SEARCH:
        return _SEARCH[search_alg]
    if isinstance(search_alg, dict):
        return _space.to_json(search_alg, "search_alg")  # {"type": "tpe", ...}: tune checks it
    name = search_alg if isinstance(search_alg, str) else type(search_alg).__name__
    raise ValueError(f"search_alg={name!r} is not supported: use 'random' (the default), "
                     "'tpe' (Optuna's TPE, on ASHA's rungs with tune.ASHAScheduler), 'bohb' "
                     "(TPE with BOHB's preset), or {'type': 'tpe', 'preset': 'optuna'|'bohb'}"
                     + _space.did_you_mean(name, list(_SEARCH)))


def _stop(stop):
    if stop is None:
        return None
    if callable(stop) or not isinstance(stop, dict):
        raise TypeError("stop must be a dict of result key to threshold, e.g. "
                        "{'val_accuracy': 0.95, 'training_iteration': 50}; stopper objects and "
                        "functions are not supported")
    return _space.to_json(stop, "stop")


def build_space(trainable, config=None, *, name=None, metric=None, mode=None, constraints=None,
                num_samples=None, max_concurrent_trials=None, seed=None, scheduler=None,
                search_alg=None,
                resources_per_trial=None, stop=None, time_budget_s=None,
                trial_time_limit_s=None, max_failures=None, fail_fast=None,
                stop_experiment_on_target=None, allow_missing_metric=None,
                progress_reporter=None, points_to_evaluate=None, stop_grace_s=None,
                status_interval_s=None, result_timeout_s=None, executor=None):
    """The space.json object tune.run writes for these arguments (docs/python.md has the table).

    It translates and judges nothing: mode is written only when given (the engine refuses
    a scheduler, or a metric named like an accuracy, without one), and every value goes as
    given for the engine to check when tune.run runs the file: a list metric and mode
    (several objectives) and constraints ({"gpu_mem_gb": {"<=": 16}}) included. Refused
    here is only what JSON cannot carry (a callable, NaN, an object) and Ray arguments
    with no counterpart."""
    search = _search(search_alg)
    if callable(trainable) and not isinstance(trainable, (list, tuple)):
        if inspect.isclass(trainable):
            raise TypeError("class trainables are not supported: write a function "
                            "train(config) that calls tune.report(...) each iteration")
        command = function_command(trainable)
    elif isinstance(trainable, (list, tuple)) and trainable and all(
            isinstance(a, str) for a in trainable):
        command = list(trainable)
    elif isinstance(trainable, str):
        raise TypeError(f"tune.run({trainable!r}): give a function, or a command as a list of "
                        "arguments (['python', 'train.py', '--lr', '{lr}']); a command is never "
                        "run through a shell, and Ray's registered trainable names do not exist here")
    else:
        raise TypeError("tune.run: the trainable must be a function train(config) or a command "
                        f"as a list of strings, not {type(trainable).__name__}")
    sched = _space.scheduler_of(scheduler)
    # One metric and one mode in the file (a name or a list of them): said to tune.run or to
    # the scheduler, not both ways. Compared as written (a tuple is the list it becomes).
    if sched is not None and sched.metric is not None:
        if metric is not None and _same(metric, "metric") != _same(sched.metric, "metric"):
            raise ValueError(f"metric={metric!r} but the scheduler says metric={sched.metric!r}")
        metric = sched.metric
    if sched is not None and sched.mode is not None:
        if mode is not None and _same(mode, "mode") != _same(sched.mode, "mode"):
            raise ValueError(f"mode={mode!r} but the scheduler says mode={sched.mode!r}")
        mode = sched.mode
    if progress_reporter is not None and not isinstance(progress_reporter, _space.CLIReporter):
        raise TypeError("progress_reporter must be tune.CLIReporter(metric_columns=[...], "
                        "parameter_columns=[...])")
    if isinstance(fail_fast, str):
        raise TypeError("fail_fast must be True, False or a number of failed trials; Ray's "
                        "fail_fast='raise' is what tune.run does anyway (raise_on_failed_trial)")

    s = {"name": name if name is not None else _default_name(trainable)}
    for key, v in (("metric", metric), ("mode", mode), ("constraints", constraints),
                   ("num_samples", num_samples), ("max_concurrent", max_concurrent_trials),
                   ("seed", seed)):
        if v is not None:
            s[key] = _space.to_json(v, _ARG_OF.get(key, key))
    s["command"] = command
    res = _resources(resources_per_trial)
    if res:
        s["resources"] = res
    if sched is not None:
        s["scheduler"] = sched.to_json()
    if executor is not None:
        s["executor"] = ({"type": executor} if isinstance(executor, str)
                         else _space.to_json(executor, "executor"))
    if search is not None:
        s["search"] = search
    if points_to_evaluate is not None:
        s["points_to_evaluate"] = _space.to_json(points_to_evaluate, "points_to_evaluate")
    stops = _stop(stop)
    if stops is not None:
        s["stop"] = stops
    for key, v in (("stop_experiment_on_target", stop_experiment_on_target),
                   ("allow_missing_metric", allow_missing_metric),
                   ("time_budget_s", time_budget_s), ("trial_time_limit_s", trial_time_limit_s),
                   ("stop_grace_s", stop_grace_s), ("status_interval_s", status_interval_s),
                   ("result_timeout_s", result_timeout_s), ("max_failures", max_failures),
                   ("fail_fast", fail_fast)):
        if v is not None:
            s[key] = _space.to_json(v, key)
    if progress_reporter is not None and progress_reporter.to_json():
        s["reporter"] = _space.to_json(progress_reporter.to_json(), "progress_reporter")
    if progress_reporter is not None and progress_reporter.max_report_frequency is not None \
            and status_interval_s is None:
        s["status_interval_s"] = _space.to_json(progress_reporter.max_report_frequency,
                                                "CLIReporter(max_report_frequency=...)")
    s["space"] = _space.config_to_space(config)
    return s


def _same(v, where):
    # A value as space.json will hold it: ("a", "b") and ["a", "b"] are the same metric.
    return _space.to_json(v, where)


def _check_kwargs(kwargs):
    for k in kwargs:
        hint = _RAY_ONLY.get(k) or _OPTUNA_ONLY.get(k)
        if hint:
            raise TypeError(f"tune.run: {k!r} is not supported: {hint}")
        raise TypeError(f"tune.run got an unexpected argument {k!r}"
                        f"{_space.did_you_mean(k, _SUPPORTED)}")


# The tune.run argument each top-level key of space.json comes from, where the names differ.
_ARG_OF = {"max_concurrent": "max_concurrent_trials", "resources": "resources_per_trial",
           "search": "search_alg", "reporter": "progress_reporter", "command": "the command"}
_RESOURCE_OF = {"gpus_per_trial": "gpu", "cpus_per_trial": "cpu"}


def dump_space(space):
    """(text, paths): space as json.dumps(space, indent=2) writes it, and for each line of
    that text the path of keys and indices of the value that begins there (a closing
    bracket's line: its container's). tune's FILE:LINE:COL then names a path, which
    explain() turns back into the Python argument it came from."""
    lines, paths = [], []

    def emit(text, path):
        lines.append(text)
        paths.append(path)

    def value(v, path, indent, prefix):
        pad = "  " * indent
        if isinstance(v, dict) and v:
            emit(pad + prefix + "{", path)
            items = list(v.items())
            for i, (k, x) in enumerate(items):
                value(x, path + (k,), indent + 1, json.dumps(k) + ": ")
                if i < len(items) - 1:
                    lines[-1] += ","
            emit(pad + "}", path)
        elif isinstance(v, list) and v:
            emit(pad + prefix + "[", path)
            for i, x in enumerate(v):
                value(x, path + (i,), indent + 1, "")
                if i < len(v) - 1:
                    lines[-1] += ","
            emit(pad + "]", path)
        else:
            emit(pad + prefix + json.dumps(v, allow_nan=False), path)

    value(space, (), 0, "")
    return "\n".join(lines) + "\n", paths


def _parse_path(text):
    # tune's unlocated form, e.g. "points_to_evaluate[0].x" or "space.opt.lr"
    path = []
    for part in text.split("."):
        m = re.match(r"^([^\[]*)((?:\[\d+\])*)$", part)
        if not m:
            return tuple(path + [part])
        if m.group(1):
            path.append(m.group(1))
        path += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return tuple(path)


def _words_in_config(obj, rest, words):
    """The Python words for the value at path `rest` inside config value obj."""
    while rest:
        if isinstance(obj, _space.Domain):
            kind_args = obj.args
            if rest[0] == obj.kind and len(rest) >= 3 and obj.kind in ("choice", "grid_search") \
                    and isinstance(kind_args, list) and isinstance(rest[1], int) \
                    and rest[1] < len(kind_args):
                # inside one value of a choice: go on into that value
                words += f"[{obj.kind} value {rest[1]}]"
                obj, rest = kind_args[rest[1]], rest[2:]
                continue
            return f"{words}: {obj!r}"
        key = rest[0]
        if isinstance(obj, dict) and key in obj:
            words += f"[{key!r}]"
            obj, rest = obj[key], rest[1:]
        elif isinstance(obj, (list, tuple)) and isinstance(key, int) and key < len(obj):
            words += f"[{key}]"
            obj, rest = obj[key], rest[1:]
        else:
            break
    if isinstance(obj, _space.Domain):
        return f"{words}: {obj!r}"
    if obj is not None and not isinstance(obj, (dict, list)):
        return f"{words} = {obj!r}"
    return words


def _python_words(path, space, config, sched):
    """What the user wrote in Python for the space.json value at path."""
    if not path:
        return "tune.run(...)"
    key = path[0]
    if key == "space":
        return _words_in_config(config if config is not None else {}, path[1:], "config")
    if key == "scheduler" and sched is not None:
        cls = type(sched).__name__
        if len(path) > 1 and path[1] in sched.keys:
            inner = "".join(f"[{p!r}]" for p in path[2:])
            return f"tune.{cls}({path[1]}={sched.keys[path[1]]!r}){inner}"
        if len(path) > 1 and path[1] == "type":
            return f"scheduler={sched!r}"
        return repr(sched)
    if key == "resources" and len(path) > 1:
        path = (key, _RESOURCE_OF.get(path[1], path[1])) + path[2:]
        space = {key: {_RESOURCE_OF.get(k, k): v for k, v in space.get(key, {}).items()}}
    arg = _ARG_OF.get(key, key)
    v, found = space, True
    for p in path:
        if isinstance(v, dict) and p in v or isinstance(v, list) and isinstance(p, int) \
                and p < len(v):
            v = v[p]
        else:
            found = False
            break
    if len(path) == 1:
        return f"{arg}={v!r}" if found else arg
    words = arg + "".join(f"[{p!r}]" for p in path[1:])
    return f"{words} = {v!r}" if found and not isinstance(v, (dict, list)) else words


class SpaceError(TuneError, ValueError):
    """The engine refused the space.json tune.run wrote for these arguments. The message
    names the Python argument and then the engine's own words; the second line is tune's
    FILE:LINE:COL in the generated file. A TuneError (exit_code 2, as `tune run` exits)
    and a ValueError (what Ray raises for a bad argument) both."""


def explain(tail, space_path, paths, space, config, sched):
    """tune's refusal of the generated file (its 'FILE:LINE:COL: msg' or 'FILE: path: msg'
    line in tail) in Python's terms, or None when tail has no such line."""
    for line in tail:
        if line.startswith("tune: "):
            line = line[len("tune: "):]
        if not line.startswith(space_path + ":"):
            continue
        rest = line[len(space_path) + 1:]
        m = re.match(r"^(\d+):(\d+): (.*)$", rest)
        if m:
            n = int(m.group(1))
            path = paths[n - 1] if 0 < n <= len(paths) else ()
            msg = m.group(3)
        else:
            m = re.match(r"^ ([^:]+): (.*)$", rest)
            if not m:
                continue
            path, msg = _parse_path(m.group(1)), m.group(2)
        words = _python_words(path, space, config, sched)
        if path[:1] == ("mode",) and "mode" not in space:
            msg += " (pass mode='min' or mode='max' to tune.run, or to the scheduler)"
        if path[:1] in (("metric",), ("mode",)):
            msg = _python_remedy(msg)
        return f"{words}: {msg}\n(tune: {line})"
    return None


def _python_remedy(msg):
    """The engine's remedy for "metric"/"mode" (write "mode": ["min", "min"]) said as the
    tune.run argument (mode=['min', 'min']), the engine's words kept otherwise."""
    def arg(m):
        try:
            return f"{m.group(1)} {m.group(2)}={json.loads(m.group(3))!r}"
        except ValueError:
            return m.group(0)
    return re.sub(r'\b(write|add) "(mode|metric)": (\[[^\]]*\]|"[^"]*")', arg, msg)


def _pythonize(text, name, db):
    """tune's remedies (CLI flags) said the Python way."""
    call = f"tune.resume({name!r}, storage={db!r})"
    text = re.sub(r"`?tune resume \S+ --db \S+?`?(?=[\s.;,)]|$)", call, text)
    text = re.sub(r"`tune resume \S+`", call, text)
    text = text.replace("(or tune run --resume)", "(or run again with resume='AUTO')")
    text = re.sub(r"`tune run \S+ --restart`", "restart=True", text)
    text = re.sub(r"(pass|with) --restart", r"\1 restart=True", text)
    text = text.replace("use another --db", "use another storage=")
    text = text.replace("and finished; pass restart=True to run it again under a new name",
                        "and finished: resume='AUTO' returns its analysis, restart=True runs "
                        "it again under a new name")
    # the argument to fix: the metric (one objective or several), a constraint's key, or both
    args = [a for a, said in (("metric=", re.search(r'reports no "[^"]*", (objective \d+ of|the '
                                                   r'experiment\'s) "metric"', text)),
                              ("constraints=", 'a key of "constraints"' in text)) if said]
    text = text.replace("Fix the name in space.json (or set \"allow_missing_metric\": true to run "
                        "anyway)", f"Fix {' or '.join(args) or 'metric='} or the name the "
                        "trainable reports (allow_missing_metric=True runs anyway), then run "
                        "the script again: the same name replaces this stopped experiment, "
                        "none of whose results could be ranked")
    return text


def write_atomic(path, data):
    """Writes data (str, or bytes) to path whole: a reader sees the old file or the new one."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(tmp, path)


def _env():
    env = dict(os.environ)
    # The trial processes (python -m tune.trial) inherit tune's environment: this package
    # is importable there whether or not it is installed.
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + old if old else "")
    return env


def _real_fd(stream):
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def execute(args):
    """Runs `tune ARGS`; returns its exit status and the last lines of its stderr.

    stdout goes straight to this process's stdout when that is a real file descriptor (a
    terminal gets the live table), else through Python's sys.stdout line by line (a
    notebook: tune sees a pipe and prints plain status blocks). stderr is read through a
    pipe so that a failure can quote it, and echoed as it comes. tune runs in its own
    process group and gets exactly one SIGINT per KeyboardInterrupt here, so a terminal's
    Ctrl-C is not delivered twice (tune's second Ctrl-C kills the trials at once)."""
    argv = [find_binary()] + args
    sys.stdout.flush()
    out_fd = _real_fd(sys.stdout)
    popen = dict(stdin=subprocess.DEVNULL, stdout=out_fd if out_fd is not None else subprocess.PIPE,
                 stderr=subprocess.PIPE, env=_env())
    if sys.version_info >= (3, 11):
        popen["process_group"] = 0
    else:
        popen["start_new_session"] = True
    p = subprocess.Popen(argv, **popen)
    tail = []

    def pump_err():
        for raw in iter(p.stderr.readline, b""):
            line = raw.decode("utf-8", "replace")
            tail.append(line.rstrip("\n"))
            del tail[:-40]
            sys.stderr.write(line)
            sys.stderr.flush()

    def pump_out():
        for raw in iter(p.stdout.readline, b""):
            sys.stdout.write(raw.decode("utf-8", "replace"))
            sys.stdout.flush()

    threads = [threading.Thread(target=pump_err, daemon=True)]
    if out_fd is None:
        threads.append(threading.Thread(target=pump_out, daemon=True))
    for t in threads:
        t.start()
    interrupted = 0
    while True:
        try:
            rc = p.wait()
            break
        except KeyboardInterrupt:
            interrupted += 1
            try:
                p.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
    for t in threads:
        t.join()
    return rc, tail, interrupted


def _message(tail, rc, name=None, db=None):
    # tune's own words: its "tune: ..." lines, else whatever it last wrote on stderr; its
    # remedies said the Python way when the experiment is known.
    mine = [ln for ln in tail if ln.startswith("tune: ")]
    lines = mine or [ln for ln in tail if ln.strip()]
    text = "\n".join(lines[-10:]) or f"tune exited with status {rc}"
    return _pythonize(text, name, db) if name and db else text


def _actual_name(db, name, restart):
    """With restart=True tune may run NAME-2, NAME-3, ...: the newest such experiment."""
    if not restart:
        return name
    from ._results import _connect
    try:
        with _connect(db) as con:
            rows = con.execute("SELECT name FROM experiments WHERE name = ?1 OR "
                               "name GLOB ?1 || '-[0-9]*' ORDER BY id DESC LIMIT 1",
                               (name,)).fetchall()
    except TuneError:
        return name
    return rows[0][0] if rows else name


def _required_keys(settings_json):
    """The keys a first result must carry: every objective and every constrained key, as
    the engine's resolved settings list them."""
    try:
        settings = json.loads(settings_json or "{}")
    except ValueError:
        return []
    metric = settings.get("metric")
    keys = metric if isinstance(metric, list) else [metric] if metric else []
    keys += list(settings.get("constraints") or {})
    return [k for k in dict.fromkeys(keys) if isinstance(k, str) and '"' not in k]


def _stored(db, name):
    """What the database holds under name: None, or (status, space_json, never_ranked), the
    last true when the experiment stopped (INTERRUPTED) after results of which none carried
    its metric (with several objectives or constraints: none carried every objective and
    constrained key), and was not allowed to miss it: the footprint of tune's stop at a
    first result without them (allow_missing_metric false)."""
    if not os.path.exists(db):
        return None
    from ._results import _connect
    try:
        with _connect(db) as con:
            row = con.execute("SELECT id, status, space_json, metric, settings_json, "
                              "json_extract(settings_json, '$.allow_missing_metric') AS allow "
                              "FROM experiments WHERE name = ?", (name,)).fetchone()
            if row is None:
                return None
            never_ranked = False
            # (allowed to miss its metric, an interrupted run is only interrupted)
            if row["status"] == "INTERRUPTED" and row["metric"] and not row["allow"]:
                n, ranked = con.execute(
                    "SELECT count(*), count(r.metric) FROM results r JOIN trials t "
                    "ON t.id = r.trial_id WHERE t.experiment_id = ?", (row["id"],)).fetchone()
                never_ranked = n > 0 and ranked == 0
                keys = _required_keys(row["settings_json"])
                if n > 0 and not never_ranked and len(keys) > 1:
                    # as the engine's first-result check: the keys present, whatever value
                    have = " AND ".join(["json_type(r.data, ?) IS NOT NULL"] * len(keys))
                    never_ranked = not con.execute(
                        f"SELECT EXISTS (SELECT 1 FROM results r JOIN trials t ON t.id = "
                        f"r.trial_id WHERE t.experiment_id = ? AND {have})",
                        [row["id"]] + [f'$."{k}"' for k in keys]).fetchone()[0]
            return row["status"], row["space_json"], never_ranked
    except TuneError:
        return None  # not a tune database: `tune run` says so in its own words


def _finish(rc, tail, interrupted, db, name, space_path, raise_on_failed_trial, explained=None):
    if rc == EXIT_INTERRUPTED or interrupted:
        sys.stderr.write(f"tune: interrupted; resume with tune.resume({name!r}, storage={db!r}), "
                         "or run the script again with resume='AUTO'\n")
        raise KeyboardInterrupt
    if explained is not None:
        raise SpaceError(explained, exit_code=rc, name=name, storage=db)
    if rc not in (EXIT_OK, EXIT_TRIAL_ERRORS):
        raise TuneError(_message(tail, rc, name, db), exit_code=rc, name=name, storage=db)
    analysis = ExperimentAnalysis(name, storage=db, space_path=space_path, exit_code=rc)
    if raise_on_failed_trial:
        failed = [t for t in analysis.trials() if t["status"] == "ERROR"]
        if failed or rc == EXIT_TRIAL_ERRORS:
            first = failed[0] if failed else {}
            why = first.get("error") or _message(tail, rc, name, db)
            said = [_pythonize(ln, name, db) for ln in tail
                    if ln.startswith("tune: ")]  # e.g. why fail_fast stopped it
            stopped = analysis.summary().get("status") == "INTERRUPTED"  # fail_fast
            raise TuneError(f"{len(failed)} trial(s) of {name} ended in ERROR; the first, "
                            f"{first.get('trial', '?')}: {why}\n"
                            + "".join(ln + "\n" for ln in said[-5:])
                            + ("Fix the cause, then run the script again with resume='AUTO' "
                               "(a fix outside it: the trainable, the data) or restart=True "
                               "(a fix in its arguments).\n" if stopped else "")
                            + "(pass raise_on_failed_trial=False to get the analysis anyway; "
                            "`tune show` tells more)",
                            exit_code=rc, name=name, storage=db, analysis=analysis)
    return analysis


class ScriptReachedRun(BaseException):
    """Raised by tune.run while tune.trial loads the script that calls it at its top level
    (without `if __name__ == "__main__":`, as Ray's examples are written): the trial stops
    loading the script there, with every function defined above the call, and runs its
    own. A BaseException, so that a script's `except Exception` around the call cannot
    swallow it."""


def not_in_a_trial():
    """Where tune.run (or Tuner.fit) may not run: inside a trial. While tune.trial loads an
    unguarded script it raises ScriptReachedRun (the trial runs its function); anywhere
    else in a trial, RuntimeError."""
    trial_state = os.environ.get("TUNE_PYTHON_TRIAL")
    if trial_state == "loading":
        raise ScriptReachedRun()
    if trial_state:
        raise RuntimeError("tune.run was called inside a trial's function: a trial cannot start "
                           "another experiment; call tune.run from the script (at its top level "
                           "or under `if __name__ == \"__main__\":`), not from the trainable")


def _resume_mode(resume, restart):
    # Ray's spellings: False; True, "AUTO" and "LOCAL" all mean "resume it if it is there".
    if resume in (False, None):
        auto = False
    elif resume is True or (isinstance(resume, str) and resume.upper() in ("AUTO", "LOCAL")):
        auto = True
    else:
        raise ValueError(f"resume={resume!r} is not supported: resume='AUTO' (or True) resumes "
                         "an interrupted experiment of this name, returns a finished one's "
                         "analysis and starts a missing one; restart=True starts afresh")
    if auto and restart:
        raise ValueError("resume='AUTO' and restart=True contradict each other: pick one")
    return auto


def run(run_or_experiment, config=None, *, name=None, metric=None, mode=None, constraints=None,
        num_samples=None, max_concurrent_trials=None, seed=None, scheduler=None, search_alg=None,
        resources_per_trial=None, stop=None, time_budget_s=None, trial_time_limit_s=None,
        max_failures=None, fail_fast=None, stop_experiment_on_target=None,
        allow_missing_metric=None, progress_reporter=None, storage="tune.db",
        points_to_evaluate=None, stop_grace_s=None, status_interval_s=None,
        result_timeout_s=None, executor=None, resume=False, restart=False,
        raise_on_failed_trial=True, verbose=None, gpus=None, cpus=None, **ray_only):
    """Runs an experiment with the tune binary and returns its ExperimentAnalysis.

    run_or_experiment is a function train(config) (run in each trial's own process through
    `python -m tune.trial`) or a command, a list of strings with {placeholders}. The other
    arguments are Ray Tune's where the meaning is the same; docs/python.md lists each with
    the space.json key it becomes; metric and mode may be lists (several objectives:
    get_pareto_front() answers, not get_best_trial()), and constraints bounds reported values
    ({"gpu_mem_gb": {"<=": 16}}). With a fixed name, re-running a script is the edit-and-run
    loop: resume='AUTO' resumes an interrupted experiment, returns a finished one's
    analysis, starts a missing one; restart=True starts afresh (under NAME-2 if NAME
    exists); an experiment stopped because no result carried its metric is replaced.
    Raises SpaceError (a TuneError and a ValueError, exit_code 2) naming the argument the
    engine refused, TuneError when tune fails otherwise (with tune's message), and
    KeyboardInterrupt after Ctrl-C (the experiment is resumable: tune.resume)."""
    _check_kwargs(ray_only)
    not_in_a_trial()
    auto = _resume_mode(resume, restart)
    space = build_space(run_or_experiment, config, name=name, metric=metric, mode=mode,
                        constraints=constraints, num_samples=num_samples,
                        max_concurrent_trials=max_concurrent_trials,
                        seed=seed, scheduler=scheduler, search_alg=search_alg,
                        resources_per_trial=resources_per_trial, stop=stop,
                        time_budget_s=time_budget_s, trial_time_limit_s=trial_time_limit_s,
                        max_failures=max_failures, fail_fast=fail_fast,
                        stop_experiment_on_target=stop_experiment_on_target,
                        allow_missing_metric=allow_missing_metric,
                        progress_reporter=progress_reporter,
                        points_to_evaluate=points_to_evaluate, stop_grace_s=stop_grace_s,
                        status_interval_s=status_interval_s, result_timeout_s=result_timeout_s,
                        executor=executor)
    db = os.path.abspath(storage)
    if name is None:
        restart = True  # a generated name that happens to exist already: run as NAME-2
    name = space["name"]
    space_path = os.path.join(os.path.dirname(db), f"{name}.space.json")
    text, paths = dump_space(space)
    args = ["run", space_path, "--db", db] + _cli_options(verbose, gpus, cpus)
    stored = None if restart or not isinstance(name, str) else _stored(db, name)
    if stored is not None and stored[2]:
        # tune stopped it at a result without its metric (a typo in metric= or in what the
        # trainable reports): nothing was ranked, so the corrected script takes its place.
        sys.stderr.write(f"tune: experiment {name} in {db} stopped before any result carried "
                         "every key it needs (its metric, or an objective or constrained key); "
                         "replacing it with this run\n")
        rc, tail, _ = execute(["rm", name, "--yes", "--db", db])
        if rc != EXIT_OK:
            raise TuneError(_message(tail, rc, name, db), exit_code=rc, name=name, storage=db)
        stored = None
    if auto and stored is not None and stored[0] == "FINISHED":
        if (stored[1] or "") != text:
            try:
                old = json.loads(stored[1] or "{}")
            except ValueError:
                old = {}
            keys = [k for k in dict.fromkeys(list(old) + list(space))
                    if old.get(k) != space.get(k)]
            sys.stderr.write(f"tune: experiment {name} in {db} finished with another "
                             f"space.json than this call's (differing: {', '.join(keys)}); "
                             "returning its analysis as it is (restart=True runs this call's "
                             "as a new experiment)\n")
        return _finish(EXIT_OK, [], 0, db, name,
                       space_path if os.path.exists(space_path) else None,
                       raise_on_failed_trial)
    write_atomic(space_path, text)
    if auto:
        args.append("--resume")
    if restart:
        args.append("--restart")
    rc, tail, interrupted = execute(args)
    explained = None
    if rc == EXIT_USAGE and not interrupted:
        sched = _space.scheduler_of(scheduler)
        explained = explain(tail, space_path, paths, space, config, sched)
    if rc in (EXIT_OK, EXIT_TRIAL_ERRORS, EXIT_INTERRUPTED) or interrupted:
        name = _actual_name(db, name, restart)
    return _finish(rc, tail, interrupted, db, name, space_path, raise_on_failed_trial,
                   explained)


def _cli_options(verbose, gpus, cpus):
    args = []
    if verbose == 0:
        args.append("--quiet")
    if gpus is not None:  # "none", "0,1" or a list of device numbers, as --gpus takes
        args += ["--gpus", gpus if isinstance(gpus, str) else ",".join(str(g) for g in gpus)]
    if cpus is not None:  # tune judges the number
        args += ["--cpus", str(cpus)]
    return args


def resume(name, storage="tune.db", *, raise_on_failed_trial=True, verbose=None, gpus=None,
           cpus=None):
    """Continues an interrupted experiment (`tune resume NAME --db DB`) and returns its
    ExperimentAnalysis, as tune.run does; a finished one's analysis comes back as it is."""
    db = os.path.abspath(storage)
    rc, tail, interrupted = execute(["resume", name, "--db", db] + _cli_options(verbose, gpus, cpus))
    space_path = os.path.join(os.path.dirname(db), f"{name}.space.json")
    return _finish(rc, tail, interrupted, db, name,
                   space_path if os.path.exists(space_path) else None, raise_on_failed_trial)
