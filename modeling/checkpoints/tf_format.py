"""Reading and writing checkpoints: the original's name-based format and ours.

Released BERT checkpoints are TF1 name-based: one tensor per variable name
(`bert/embeddings/word_embeddings`, `cls/predictions/output_bias`, ...). Each
model in `modeling.bert_model` knows the original name of each of its
variables (`original_names()`), so loading is a lookup and writing is a
`SaveV2` of those names. Our own training checkpoints are TensorFlow
object-based checkpoints of `{"model": model}`; every function here accepts
either kind, and a directory means its latest checkpoint.
"""

import contextlib
import logging
import os

import numpy as np
import tensorflow as tf

from plumbing.errors import UserError

# Names the original's training also wrote that are not model weights.
_TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v")
_TRAINING_STATE_NAMES = ("global_step",)
_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


class CheckpointMismatchError(UserError):
  """A checkpoint tensor does not fit the model's variable."""


class LoadReport(object):
  """What a load did: names loaded, missing from the checkpoint, unused in it."""

  def __init__(self, loaded, missing, unused, assigned=()):
    self.loaded = sorted(loaded)
    self.assigned = list(assigned)  # The variables given a value.
    self.missing = sorted(missing)
    self.unused = sorted(unused)

  def __str__(self):
    training_state = [n for n in self.unused if _is_training_state(n)]
    other_unused = [n for n in self.unused if not _is_training_state(n)]
    lines = ["Loaded %d variables." % len(self.loaded)]
    if self.missing:
      lines.append("Not in the checkpoint (left as initialised): %s" %
                   ", ".join(self.missing))
    if other_unused:
      lines.append("In the checkpoint but not in the model: %s" %
                   ", ".join(other_unused))
    if training_state:
      lines.append("Ignored %d optimizer/step tensors." % len(training_state))
    return "\n".join(lines)


def _is_training_state(name):
  return name in _TRAINING_STATE_NAMES or name.endswith(_TRAINING_STATE_SUFFIXES)


def is_prefix(path):
  """Whether `path` names a checkpoint (its .index file is there). Asked
  before whether it is a directory: some file systems (TensorFlow's ram://)
  call any prefix of a file's name a directory."""
  return tf.io.gfile.exists(os.fspath(path) + ".index")


def resolve(path):
  """A checkpoint prefix from a prefix or a directory (its latest checkpoint)."""
  if is_prefix(path):
    return os.fspath(path)
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise FileNotFoundError("No checkpoint found in directory %s." % path)
    return latest
  raise FileNotFoundError("No checkpoint at %s (expected %s.index)." % (path, path))


def reader(prefix):
  """The reader of the checkpoint `prefix` names (tf.train.load_checkpoint
  would first ask whether it is a directory; see is_prefix)."""
  return tf.compat.v1.train.NewCheckpointReader(prefix)


def is_object_based(path):
  return _OBJECT_GRAPH_KEY in reader(resolve(path)).get_variable_to_shape_map()


def load_original_checkpoint(model, path, log=True):
  """Loads a name-based (released) checkpoint into `model`; returns a LoadReport.

  Every model variable whose original name is in the checkpoint is assigned;
  a shape mismatch raises CheckpointMismatchError naming the variable and both
  shapes before anything is assigned.
  """
  prefix = resolve(path)
  tensors = reader(prefix)
  shapes = tensors.get_variable_to_shape_map()
  names = model.original_names()
  to_assign = []
  for name, variable in names.items():
    if name not in shapes:
      continue
    if tuple(shapes[name]) != tuple(variable.shape):
      raise CheckpointMismatchError(
          "Checkpoint %s: variable %s has shape %s, but the model expects %s "
          "(does the config match the checkpoint?)." %
          (prefix, name, list(shapes[name]), list(variable.shape)))
    to_assign.append((name, variable))
  for name, variable in to_assign:
    variable.assign(tensors.get_tensor(name).astype(np.float32))
  report = LoadReport(
      loaded=[n for n, _ in to_assign],
      missing=[n for n in names if n not in shapes],
      unused=[n for n in shapes if n not in names and n != _OBJECT_GRAPH_KEY],
      assigned=[v for _, v in to_assign])
  if log:
    logging.info("Loaded %s:\n%s", prefix, report)
  return report


def save_original_checkpoint(model, path):
  """Writes `model` in the original's name-based format; returns the prefix.

  Also records it as the directory's latest checkpoint, as the original's
  Saver did, so tools given the directory find it.
  """
  return write_original_tensors(model.original_names(), path)


def write_original_tensors(tensors, path):
  """Writes {original name: variable or array} as a name-based checkpoint
  at prefix `path` (its directory's latest); returns the prefix."""
  keys = sorted(tensors)
  tf.io.gfile.makedirs(path.rsplit("/", 1)[0] if "/" in path else ".")
  tf.raw_ops.SaveV2(prefix=path, tensor_names=keys,
                    shape_and_slices=[""] * len(keys),
                    tensors=[tf.convert_to_tensor(tensors[k]) for k in keys])
  _record_latest(path)
  return path


def _record_latest(prefix):
  """Makes `prefix` its directory's latest checkpoint (the `checkpoint` file)."""
  directory = prefix.rsplit("/", 1)[0] if "/" in prefix else "."
  tf.compat.v1.train.update_checkpoint_state(directory, prefix)


def save_checkpoint(model, path):
  """Writes our object-based checkpoint of `model`; returns its prefix."""
  prefix = tf.train.Checkpoint(model=model).write(path)
  _record_latest(prefix)
  return prefix


def load_checkpoint(model, path, log=True):
  """Loads either kind of checkpoint into `model` (the model's part of it).
  An encoder alone (no `heads`: a BertModel) reads the encoder of ours,
  which every task model holds as its `bert`, else the checkpoint's model
  itself."""
  prefix = resolve(path)
  with reporting_damage(prefix):
    if not is_object_based(prefix):
      return load_original_checkpoint(model, prefix, log=log)
    status = None
    if not hasattr(model, "heads"):
      status = tf.train.Checkpoint(model=tf.train.Checkpoint(bert=model)).read(prefix)
    if status is None or not matched_every_object(status):
      status = tf.train.Checkpoint(model=model).read(prefix)
  status.expect_partial()
  if log:
    logging.info("Loaded object-based checkpoint %s.", prefix)
  return status


def matched_every_object(status):
  """Whether a load of our checkpoint (load_checkpoint's result) gave every
  object of the model its value."""
  try:
    status.assert_existing_objects_matched()
  except AssertionError:
    return False
  return True


class DamagedCheckpointError(UserError):
  """A checkpoint whose files cannot be read whole."""


@contextlib.contextmanager
def reporting_damage(prefix, advice="Copy it again, or write it again."):
  """Turns TensorFlow's errors about a checkpoint's unreadable files (a
  truncated or changed .index or .data file) into one line naming it."""
  try:
    yield
  except (tf.errors.NotFoundError, tf.errors.PermissionDeniedError):
    raise
  except (tf.errors.OpError, IndexError) as error:
    what = " ".join(str(error).strip().split("\n\n")[0].split())
    raise DamagedCheckpointError(
        "%s: the checkpoint cannot be read (%s): its .index or .data-* file is "
        "incomplete or damaged (an interrupted copy or write?). %s" %
        (prefix, what[:200], advice)) from None
