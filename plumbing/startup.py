"""Loads TensorFlow for a script, leaving out what no script uses; each
script that needs TensorFlow imports this module before anything else of
the project.

`import tensorflow` loads Keras, and Keras imports matplotlib whenever it is
installed (`make demo` installs it, and most data-science environments have
it) for image-plotting helpers that nothing here calls. On a 2-core machine
that is about a second of every command's start, a sixth of a short
evaluation (bench/README.md). So matplotlib looks absent to TensorFlow and
Keras while they load; afterwards it imports as usual (the demo's and the
benchmarks' charts import it when they draw).
"""

import importlib.abc
import sys


class _HideMatplotlib(importlib.abc.MetaPathFinder):
  """An import finder that reports matplotlib as not installed."""

  def find_spec(self, fullname, path=None, target=None):
    del path, target  # The name decides.
    if fullname.split(".")[0] == "matplotlib":
      raise ModuleNotFoundError("matplotlib is hidden while TensorFlow loads",
                                name=fullname)
    return None


def _load_tensorflow():
  finder = _HideMatplotlib()
  sys.meta_path.insert(0, finder)
  try:
    import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  finally:
    sys.meta_path.remove(finder)


if "tensorflow" not in sys.modules and "matplotlib" not in sys.modules:
  _load_tensorflow()
