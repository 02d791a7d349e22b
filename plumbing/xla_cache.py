"""XLA's compiled kernels, kept on disk from one run to the next.

Training compiles its fused kernels (modeling/blocks/fused.py), the fused
optimizer update and, with --use_xla, the whole step, once for each batch
shape: about a second each on a 2-core CPU, and a fine-tuning run whose batches are cut to
their longest row meets ten or more shapes. TensorFlow can keep what it
compiled in a directory and load it in later processes (the TF_XLA_FLAGS
option --tf_xla_persistent_cache_directory): an entry is used only if the
whole computation matches, and is written whole (a temporary file, then a
rename). It does not record which processor an entry was compiled for, so
each TensorFlow version, CPU feature set and set of GPUs gets a folder of its
own: a cache shared by several machines never hands one another's code.
"""

import glob
import hashlib
import os
import platform
import tempfile

from absl import logging

from plumbing import files

_TENSORFLOW_OPTION = "--tf_xla_persistent_cache_directory"


def default_directory():
  return files.cache_directory("xla")


def _cpu_features():
  """The CPU's model and feature flags, as the kernel reports them (x86:
  "flags", ARM: "Features"); the processor's name elsewhere."""
  try:
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
      lines = f.read().split("\n\n")[0].splitlines()
  except OSError:
    return platform.processor()
  keys = ("model name", "flags", "features", "cpu part", "cpu implementer")
  return "\n".join(l for l in lines if l.split(":")[0].strip().lower() in keys)


def _gpus():
  """NVIDIA's driver's description of each GPU, and which are visible; read
  from files because asking TensorFlow would start its devices (and XLA's
  options) before the cache is set."""
  described = []
  for path in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
    try:
      with open(path, encoding="utf-8", errors="replace") as f:
        described.append(f.read())
    except OSError:
      pass
  return "\n".join(described + [os.environ.get("CUDA_VISIBLE_DEVICES", "")])


def folder_for_this_machine(directory):
  """`directory`'s subfolder for this TensorFlow, CPU and GPUs."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  machine = _cpu_features() + "\n" + _gpus()
  digest = hashlib.sha1(machine.encode("utf-8")).hexdigest()[:12]
  return os.path.join(directory, "tf%s-%s-%s" % (tf.__version__, platform.machine(), digest))


def enable(directory):
  """Points TensorFlow's XLA cache at `directory`'s folder for this machine;
  returns that folder, or None when the cache stays off (an empty
  `directory`, TF_XLA_FLAGS already naming a cache, or a folder that cannot
  be written: compiling then works as without a cache). Takes effect only
  if called before the process's first XLA compilation."""
  flags = os.environ.get("TF_XLA_FLAGS", "")
  if not directory or _TENSORFLOW_OPTION in flags:
    return None
  folder = folder_for_this_machine(directory)
  if any(c.isspace() for c in folder):  # TF_XLA_FLAGS is split at white space.
    logging.warning("No cache of compiled XLA kernels: its path %r has white space; "
                    "set --xla_cache_dir to one without.", folder)
    return None
  if not files.is_remote(folder):
    try:
      os.makedirs(folder, exist_ok=True)
      with tempfile.TemporaryFile(dir=folder):
        pass
    except OSError as error:
      logging.warning("No cache of compiled XLA kernels (%s); they are compiled in "
                      "every run.", error)
      return None
  os.environ["TF_XLA_FLAGS"] = ("%s %s=%s" % (flags, _TENSORFLOW_OPTION, folder)).strip()
  return folder
