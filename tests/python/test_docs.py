"""Every ```python block of docs/python.md and docs/from-ray-tune.md runs, or says why not.

A block is a complete script unless an HTML comment right before it (at the start of a
line; blank lines between are fine; several comments may stack) says otherwise. The comments are invisible where the
Markdown is rendered:

    <!-- test: skip: REASON -->   not run; REASON is required (Ray's own code, say)
    <!-- test: file NAME.py -->   saved as NAME.py in the document's folder, which later
                                  blocks (and their trials) import; compiled, not run
    <!-- test: setup -->          shown code that every later block of the document needs:
                                  it runs before each of them, and is run once by itself
    <!-- test: before            hidden code run just before this block, in the same script
    CODE                          (a stand-in for the user's own training step, say)
    -->
    <!-- test: needs MODULE -->   not run where this Python lacks MODULE (torch, say);
                                  the test skips when nothing else ran

Each block that runs is one script (the setup blocks so far, its hidden code, the block)
run by this Python in a fresh folder of its own, with the checkout's python/, the
document's folder and tests/python/ (doc_trainables.py, the functions a document shows
once and later blocks reuse) on PYTHONPATH, the build's tune as TUNE_BIN behind a wrapper that gives
`tune run`/`resume` a pool of one GPU (--gpus 0: the documents ask for GPU slices, and the
trainables are CPU code). A block that fails, a marker with no reason or no block after
it, and a block that is neither run nor marked all fail the test, naming the line.
Not for: checking what the blocks print (the other tests check the behaviour)."""

import importlib.util
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from helpers import HERE, PYDIR, SOURCE, TUNE, Case

MARK = re.compile(r"<!--\s*test:\s*(skip|file|setup|before|needs)\b(.*?)-->", re.S)


def blocks(path):
    """[(line, markers, code)] of every ```python block of the Markdown file; markers is a
    list of (kind, argument). Raises ValueError for a marker not followed by a block."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out, pending, pos = [], [], 0
    fence = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
    comment = re.compile(r"^<!--.*?-->", re.S | re.M)  # at a line's start: not `<!-- -->` in prose
    while pos < len(text):
        m_fence, m_comment = fence.search(text, pos), comment.search(text, pos)
        if m_comment and (not m_fence or m_comment.start() < m_fence.start()):
            between = text[pos:m_comment.start()]
            if pending and between.strip():
                raise ValueError(f"{path}:{pending[0][2]}: a test marker must come right "
                                 "before its ```python block")
            mm = MARK.fullmatch(m_comment.group(0))
            if mm:
                line = text.count("\n", 0, m_comment.start()) + 1
                pending.append((mm.group(1), mm.group(2).strip(), line))
            pos = m_comment.end()
            continue
        if not m_fence:
            break
        if pending and text[pos:m_fence.start()].strip():
            raise ValueError(f"{path}:{pending[0][2]}: a test marker must come right before "
                             "its ```python block")
        line = text.count("\n", 0, m_fence.start()) + 1
        if m_fence.group(1) == "python":
            out.append((line, [(k, a) for k, a, _ in pending], m_fence.group(2)))
        elif pending:
            raise ValueError(f"{path}:{pending[0][2]}: a test marker before a "
                             f"```{m_fence.group(1)} block, which is never run")
        pending = []
        pos = m_fence.end()
    if pending:
        raise ValueError(f"{path}:{pending[0][2]}: a test marker with no block after it")
    return out


def python_has(module):
    return importlib.util.find_spec(module) is not None


class Docs(Case):
    def setUp(self):
        super().setUp()
        wrapper = os.path.join(self.dir, "tune-with-a-gpu")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\ncase "$1" in run|resume) exec "{TUNE}" "$@" --gpus 0 ;; '
                    f'esac\nexec "{TUNE}" "$@"\n')
        os.chmod(wrapper, 0o755)
        self.env = dict(os.environ, TUNE_BIN=wrapper, PYTHONDONTWRITEBYTECODE="1")
        self.env.pop("TUNE_DB", None)

    def run_document(self, name):
        path = os.path.join(SOURCE, "docs", name)
        folder = os.path.join(self.dir, name.replace(".", "_"))
        os.mkdir(folder)
        self.env["PYTHONPATH"] = os.pathsep.join([PYDIR, folder, HERE])
        setup, ran, failures, skipped = [], 0, [], []
        for line, markers, code in blocks(path):
            where = f"docs/{name}:{line}"
            kinds = dict(markers)
            if "skip" in kinds:
                if not kinds["skip"].lstrip(":").strip():
                    failures.append(f"{where}: `test: skip` needs a reason")
                continue
            if "needs" in kinds and not python_has(kinds["needs"]):
                skipped.append(f"{where} (no {kinds['needs']})")
                continue
            if "file" in kinds:
                target = os.path.join(folder, kinds["file"])
                with open(target, "w") as f:
                    f.write(code)
                try:
                    py_compile.compile(target, doraise=True,
                                       cfile=os.path.join(self.dir, "compiled.pyc"))
                except py_compile.PyCompileError as e:
                    failures.append(f"{where}: {e}")
                continue
            hidden = "\n".join(a for k, a in markers if k == "before")
            script = "\n".join(setup + [hidden, code])
            work = tempfile.mkdtemp(prefix=f"block{line}-", dir=folder)
            script_path = os.path.join(work, f"block_{line}.py")
            with open(script_path, "w") as f:
                f.write(script)
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, script_path], cwd=work, env=self.env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=300)
            ran += 1
            print(f"{where}: exit {p.returncode} in {time.monotonic() - t0:.1f} s",
                  file=sys.stderr)  # for a reader of ctest's log; nothing depends on it
            if p.returncode != 0:
                failures.append(f"{where}: exited with {p.returncode}:\n"
                                + "\n".join((p.stdout + p.stderr).splitlines()[-25:]))
            if "setup" in kinds:
                setup.append(code)
        self.assertEqual(failures, [], "\n\n".join(failures))
        if skipped and not ran:
            self.skipTest("not run: " + ", ".join(skipped))
        return ran

    def test_python_md(self):
        self.assertGreater(self.run_document("python.md"), 0)

    def test_from_ray_tune_md(self):
        self.assertGreater(self.run_document("from-ray-tune.md"), 0)


class Markers(unittest.TestCase):
    """The convention itself: a stray marker and a marker without a reason are errors."""

    def parse(self, text):
        d = tempfile.mkdtemp(prefix="tune-docs-")
        self.addCleanup(shutil.rmtree, d)
        p = os.path.join(d, "doc.md")
        with open(p, "w") as f:
            f.write(text)
        return blocks(p)

    def test_markers_attach_to_the_next_python_block_only(self):
        got = self.parse("text\n<!-- test: skip: Ray's code -->\n\n```python\nimport ray\n```\n"
                         "```sh\nls\n```\n<!-- test: before\nx = 1\n-->\n```python\nprint(x)\n```\n")
        self.assertEqual([(ln, m) for ln, m, _ in got],
                         [(4, [("skip", ": Ray's code")]), (13, [("before", "x = 1")])])
        self.assertEqual(got[1][2], "print(x)\n")
        with self.assertRaisesRegex(ValueError, "right before"):
            self.parse("<!-- test: setup -->\nsome prose\n```python\npass\n```\n")
        with self.assertRaisesRegex(ValueError, "never run"):
            self.parse("<!-- test: setup -->\n```sh\nls\n```\n")
        with self.assertRaisesRegex(ValueError, "no block after it"):
            self.parse("```python\npass\n```\n<!-- test: skip: why -->\n")


if __name__ == "__main__":
    unittest.main()
