"""contrib.download with TVM's names, offline: download_testdata finds a tutorial's test file in
local test-data directories and never touches the network.

    path = download_testdata(url, "kws_ref_model.tflite", module="model")

Where it looks, in order: $AOT_TESTDATA_DIR/<module>/<relpath>, then
~/.cache/aot/testdata/<module>/<relpath> ($AOT_CACHE_DIR/testdata when that is set). A file in
neither is refused by name, with the URL it would come from and the places to put it: builds here
run without the internet, and a fetched file would be an input nobody checked."""
from __future__ import annotations

import os

from ..errors import AotError


class TestDataMissing(AotError):
    """A test-data file is in none of the local test-data directories."""

    __test__ = False          # not a pytest test class, despite its name


def _parts(module):
    if module is None:
        return []
    if isinstance(module, (list, tuple)):
        return [str(m) for m in module]
    return [str(module)]


def testdata_dirs():
    """The directories download_testdata searches, first match wins."""
    dirs = []
    if os.environ.get("AOT_TESTDATA_DIR"):
        dirs.append(os.environ["AOT_TESTDATA_DIR"])
    cache = os.environ.get("AOT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "aot")
    dirs.append(os.path.join(cache, "testdata"))
    return dirs


def download_testdata(url, relpath, module=None, overwrite=False):
    """The local path of test file `relpath` (under `module`, a name or a list of names), as
    TVM's download_testdata returns it; `url` only names where the file comes from."""
    del overwrite                     # nothing is ever fetched, so nothing is overwritten
    rel = os.path.join(*_parts(module), relpath)
    if os.path.isabs(relpath) or ".." in rel.split(os.sep):
        raise AotError(f"download_testdata: '{rel}' must be a relative path inside the test-data directory")
    places = [os.path.join(d, rel) for d in testdata_dirs()]
    for p in places:
        if os.path.isfile(p):
            return p
    raise TestDataMissing(
        f"download_testdata: test file '{rel}' is not here, and aot does not download (from {url}): "
        f"put it at {' or '.join(places)}" +
        ("" if os.environ.get("AOT_TESTDATA_DIR") else " (or set AOT_TESTDATA_DIR to a directory holding it)"))


def download(url, path, overwrite=False, size_compare=False, retries=3):
    """TVM's download: refused, aot builds and tests run offline."""
    del overwrite, size_compare, retries
    raise AotError(f"download: aot does not fetch files from the network ({url}); place the file at '{path}' "
                   "yourself")
