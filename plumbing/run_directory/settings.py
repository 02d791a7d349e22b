"""The settings a training run computes with, recorded in its output directory.

Run again, a training command resumes from the checkpoints in its
--output_dir, as the original's Estimator did. So that a changed command does
not silently continue another run, a training run records the settings that
decide what it computes in `<output_dir>/run_settings.json` when it starts
training (`write`), and the next training run into a directory holding
checkpoints compares its own with them before any work (`check`):

  * the same settings: it resumes, as before;
  * more steps or epochs (`growing` settings) and nothing else: it continues,
    with one line saying the learning-rate schedule changes from there;
  * anything else: one error line naming each setting that differs (then and
    now) and the two ways on, another --output_dir or `--start_over`;
  * no record (a directory written before records were kept): it resumes,
    with one line saying its settings were not recorded.

`--start_over` moves everything in the directory into
`previous_runs/<date-time>/` inside it (moved, not deleted) and starts
afresh. What counts as a setting is the caller's choice: hardware and
bookkeeping (strategy, devices, XLA, checkpoint frequency, eval and predict
batch sizes) are left out, so a run may resume on other machines.
"""

import datetime
import json
import os

from absl import logging

from plumbing.errors import UserError
from plumbing import files
from plumbing.run_directory import lock as run_lock

FILE_NAME = "run_settings.json"
PREVIOUS_RUNS = "previous_runs"
# TensorFlow's record of a directory's checkpoints (tf.train.CheckpointManager's).
_CHECKPOINT_STATE = "checkpoint"


def file_setting(path):
  """A data or model file as a setting: its absolute path and size in bytes;
  a directory: its path and the sizes of the training files in it (those
  whose names hold "train", as every task's do, in it or a folder below);
  a glob or comma-separated list: each file; a name that is not a
  file or directory (a checkpoint prefix, `tfds`): the name."""
  if not path:
    return path
  if "," in path or any(c in path for c in "*?["):
    return [file_setting(name) for part in path.split(",") for name in files.glob_files(part)]
  absolute = path_setting(path)
  if files.is_directory(absolute):
    return {"path": absolute, "training_files": _training_files(absolute)}
  if files.exists(absolute):
    return {"path": absolute, "bytes": files.file_size(absolute)}
  return path


def path_setting(path):
  """A path as a setting, absolute when local (a checkpoint's prefix or
  directory, whose contents a run's checkpoints replace)."""
  if not path or files.is_remote(path):
    return path
  return os.path.abspath(path)


def _training_files(directory):
  found = {}
  for name in (files.glob_files(os.path.join(directory, "*train*")) +
               files.glob_files(os.path.join(directory, "*", "*train*"))):
    if not files.is_directory(name):
      found[os.path.relpath(name, directory)] = files.file_size(name)
  return found


def read(output_dir):
  """The settings recorded in `output_dir`, or None."""
  path = os.path.join(output_dir, FILE_NAME)
  if not files.exists(path):
    return None
  try:
    return json.loads(files.read_text(path))["settings"]
  except (ValueError, KeyError, TypeError):
    raise UserError("%s: not a record of run settings (damaged?). Delete it to resume "
                    "without a check, or train into another --output_dir." % path) from None


def write(output_dir, settings):
  files.makedirs(output_dir)
  files.write_text(os.path.join(output_dir, FILE_NAME), json.dumps(
      {"settings": settings}, indent=2) + "\n")


def has_checkpoints(output_dir):
  return files.exists(os.path.join(output_dir, _CHECKPOINT_STATE))


def check(output_dir, settings, growing=(), start_over=False):
  """Compares `settings` ({flag name: JSON value}) with what a run in
  `output_dir` recorded, as the module docstring says (with `start_over`,
  moves that run aside instead); writes nothing else: training records
  them when it starts. `growing`: the names whose values may grow (steps,
  epochs)."""
  if start_over:
    _move_aside(output_dir)
  elif has_checkpoints(output_dir):
    recorded = read(output_dir)
    if recorded is None:
      logging.info("%s holds checkpoints of a run whose settings were not recorded: "
                   "resuming it with this command's settings, recorded from now on.",
                   output_dir)
    else:
      _compare(output_dir, recorded, settings, growing)


def _compare(output_dir, recorded, settings, growing):
  differences, grown = [], []
  for name in sorted(set(recorded) | set(settings)):
    old, new = recorded.get(name), settings.get(name)
    if old == new:
      continue
    if name in growing and _grows(old, new):
      grown.append("--%s from %s to %s" % (name, _show(old), _show(new)))
    else:
      differences.append("--%s was %s, now %s" % (name, _show(old), _show(new)))
  if differences:
    raise UserError(
        "--output_dir=%s holds checkpoints of a run with other settings (%s). Train into "
        "another --output_dir, or add --start_over to move that run aside (into %s/) and "
        "start afresh." % (output_dir, "; ".join(differences),
                           os.path.join(output_dir, PREVIOUS_RUNS)))
  if grown:
    logging.info("Continuing the run in %s with %s: the learning-rate schedule changes "
                 "from its latest checkpoint on.", output_dir, ", ".join(grown))


def _grows(old, new):
  numbers = (int, float)
  return (isinstance(old, numbers) and isinstance(new, numbers) and
          not isinstance(old, bool) and new > old)


def _show(value):
  """A setting as the error line shows it."""
  if value is None:
    return "not set"
  if isinstance(value, dict) and "bytes" in value:
    return "%s (%d bytes)" % (value["path"], value["bytes"])
  if isinstance(value, dict) and "training_files" in value:
    return "%s (%s)" % (value["path"], ", ".join(
        "%s: %d bytes" % item for item in sorted(value["training_files"].items())) or
                        "no training files")
  if isinstance(value, list):
    return "[%s]" % ", ".join(_show(v) for v in value)
  return json.dumps(value)


def _move_aside(output_dir):
  """Moves everything in `output_dir` (but the lock and earlier runs moved
  aside) into previous_runs/<date-time>/; nothing when it is empty."""
  if not files.exists(output_dir):
    return
  kept = {run_lock.LOCK_NAME, PREVIOUS_RUNS}
  names = [n for n in files.list_directory(output_dir) if n.rstrip("/") not in kept]
  if not names:
    return
  with run_lock.hold(output_dir):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = os.path.join(output_dir, PREVIOUS_RUNS, stamp)
    suffix = 1
    while files.exists(target):
      suffix += 1
      target = os.path.join(output_dir, PREVIOUS_RUNS, "%s-%d" % (stamp, suffix))
    files.makedirs(target)
    for name in names:
      files.move(os.path.join(output_dir, name.rstrip("/")),
                 os.path.join(target, name.rstrip("/")))
  logging.info("--start_over: moved the earlier run in %s (%d entries) to %s.",
               output_dir, len(names), target)
