"""A PEP 517 build backend in the standard library alone: builds the wheel (and sdist) of
python/ so that `pip install ./python` works without a package index. Not for: anything
but this one pure-Python package (tune/ and tune_report.py, no compiled code).
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = "tune", "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Python front end of tune, the C hyperparameter-tuning scheduler\n"
            "Requires-Python: >=3.8\nProvides-Extra: pandas\n"
            "Requires-Dist: pandas; extra == \"pandas\"\n")
WHEEL = "Wheel-Version: 1.0\nGenerator: tune_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _sources():
    """(archive name, path) of every file the package installs."""
    yield "tune_report.py", os.path.join(ROOT, "tune_report.py")
    pkg = os.path.join(ROOT, "tune")
    for d, subdirs, files in os.walk(pkg):  # with subpackages (tune/search/)
        subdirs[:] = sorted(x for x in subdirs if x != "__pycache__")
        rel = os.path.relpath(d, ROOT).replace(os.sep, "/")
        for f in sorted(files):
            if f.endswith(".py"):
                yield f"{rel}/{f}", os.path.join(d, f)


def _wheel(wheel_directory, files):
    """Writes a wheel of files [(archive name, bytes)] plus its dist-info; returns its name."""
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = list(files) + [(f"{DIST_INFO}/METADATA", METADATA.encode()),
                           (f"{DIST_INFO}/WHEEL", WHEEL.encode())]
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{arc},sha256={digest.decode()},{len(data)}")
        record.append(f"{DIST_INFO}/RECORD,,")
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(record) + "\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    def read(p):
        with open(p, "rb") as f:
            return f.read()
    return _wheel(wheel_directory, [(arc, read(p)) for arc, p in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file naming this folder: edits of the checkout take effect at once.
    return _wheel(wheel_directory, [("tune_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name = f"{NAME}-{VERSION}"
    with tarfile.open(os.path.join(sdist_directory, name + ".tar.gz"), "w:gz") as t:
        for arc, p in list(_sources()) + [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
                                          ("_build/tune_build.py", os.path.abspath(__file__))]:
            t.add(p, arcname=f"{name}/{arc}")
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        info.size = len(METADATA)
        t.addfile(info, io.BytesIO(METADATA.encode()))
    return name + ".tar.gz"
