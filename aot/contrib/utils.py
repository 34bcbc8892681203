"""TVM's tvm.contrib.utils: temporary directories for build products."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


class TempDirectory:
    """A directory removed when the object goes (keep_for_debug keeps it); relpath, listdir, `/`."""

    def __init__(self, custom_path=None, keep_for_debug=False):
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = str(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="aot_")
        self._keep = bool(keep_for_debug or custom_path or TempDirectory._keep_all)

    _keep_all = False

    @classmethod
    @contextlib.contextmanager
    def set_keep_for_debug(cls, set_to=True):
        """TVM's: directories made inside the `with` are kept (for looking at after a failure)."""
        old, cls._keep_all = cls._keep_all, bool(set_to)
        try:
            yield
        finally:
            cls._keep_all = old

    @property
    def path(self):
        return self.temp_dir

    def relpath(self, name):
        return os.path.join(self.temp_dir, name)

    def listdir(self):
        return sorted(os.listdir(self.temp_dir))

    def __truediv__(self, other):
        return Path(self.temp_dir) / other

    def __str__(self):
        return self.temp_dir

    def remove(self):
        if not self._keep and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __del__(self):
        try:
            self.remove()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass


def tempdir(custom_path=None, keep_for_debug=None):
    return TempDirectory(custom_path, bool(keep_for_debug))
