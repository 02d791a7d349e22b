"""A run's best weights on dev, and which of a run's weights a command reads.

With --eval_every_steps a fine-tuning run evaluates on dev while it trains
and keeps the best weights so far in `<output_dir>/best/`: a checkpoint of
the model alone (`ckpt-<step>`) and `history.json` (every evaluation's step
and value, the best step, the metric, the step early stopping stopped at).
history.json is written last, atomically: a run killed mid-save keeps the
previous best.

Training resumes from the run's latest checkpoint. Everything else that
reads a run's weights (evaluation, prediction, export, extract_features,
fill_mask, conversion, a fine-tuning run starting from them) asks `choose`:
the best weights when best/ belongs to the run's latest training (its
evaluations reach the latest checkpoint's step), else the latest
checkpoint; `weights="latest"`, `"best"` or a checkpoint path picks one.
`choose` logs one line naming the checkpoint and why, and says when best/
was passed over.
"""

import dataclasses
import json
import os
import re

from absl import logging
import tensorflow as tf

from modeling.checkpoints import tf_format
from plumbing.errors import UserError
from plumbing import files

DIRECTORY = "best"
HISTORY = "history.json"
CHOICES = ("best", "latest")
# The --weights flag's help, for every command that reads a run's weights.
WEIGHTS_HELP = ("Which weights of a training run's directory to read: best (its best on dev, "
                "kept by --eval_every_steps), latest (its latest checkpoint) or a "
                "checkpoint's path. Default: best when best/ belongs to the run's latest "
                "training, else latest. Training itself resumes from the latest checkpoint.")


def _prefix(directory, step):
  return os.path.join(directory, "ckpt-%d" % step)


def read_state(run_dir):
  """best/history.json of the run in `run_dir`, or None."""
  path = os.path.join(run_dir, DIRECTORY, HISTORY)
  if not files.exists(path):
    return None
  return json.loads(files.read_text(path))


class BestModel(object):
  """Keeps the best weights of `model` on dev in `<output_dir>/best/`.

  `metric` names the result to maximise (a function of the results picks
  it instead); `patience` > 0 stops training after that many evaluations
  without a better one.
  """

  def __init__(self, model, output_dir, metric, patience=0):
    self.model = model
    self.directory = os.path.join(output_dir, DIRECTORY)
    self.metric_of = metric if callable(metric) else lambda results: metric
    self.patience = patience
    # A resumed run: what it had found so far.
    self.state = read_state(output_dir) or {
        "metric": None, "best_step": None, "stopped_at": None, "history": {}}

  @property
  def best_step(self):
    return self.state["best_step"]

  @property
  def stopped_at(self):
    """The step training stopped early at, if it did."""
    return self.state["stopped_at"]

  @property
  def metric(self):
    return self.state["metric"]

  def _value(self, step):
    return self.state["history"][str(step)]

  def record(self, step, results):
    """Notes the evaluation at `step` (a dict with the metric), keeps the
    weights if they are the best so far; True when training should stop
    (the last `patience` evaluations did not improve on the best)."""
    self.state["metric"] = self.metric or self.metric_of(results)
    value = float(results[self.metric])
    self.state["history"][str(step)] = value
    best = self.best_step
    if best is None or value > self._value(best) or step == best:
      prefix = _prefix(self.directory, step)
      tf.train.Checkpoint(model=self.model).write(prefix)
      self.state["best_step"] = step
      self._save_state()
      if best is not None and best != step:
        for name in tf.io.gfile.glob(_prefix(self.directory, best) + ".*"):
          files.remove(name)
      logging.info("Step %d: %s = %.6f, the best so far; weights kept in %s.",
                   step, self.metric, value, prefix)
      return False
    since = sum(1 for s in self.state["history"] if int(s) > self.best_step)
    logging.info("Step %d: %s = %.6f; the best is %.6f at step %d (%d evaluations ago).",
                 step, self.metric, value, self._value(self.best_step), self.best_step, since)
    if self.patience and since >= self.patience:
      self.state["stopped_at"] = step
    self._save_state()
    return self.stopped_at is not None

  def _save_state(self):
    files.makedirs(self.directory)
    files.write_text(os.path.join(self.directory, HISTORY),
                     json.dumps(self.state, indent=2, sort_keys=True) + "\n")


@dataclasses.dataclass(frozen=True)
class Choice(object):
  """The checkpoint a command reads: its prefix, its training step (0 when
  it has none) and why it was chosen."""
  prefix: str
  step: int
  why: str


def checkpoint_step(prefix):
  """The training step of a checkpoint: its `step` variable (a run's
  checkpoints), else the number in a `ckpt-N` or `model.ckpt-N` name, else 0."""
  reader = tf_format.reader(prefix)
  if reader.has_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"):
    return int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
  number = re.search(r"-(\d+)$", os.path.basename(prefix))
  return int(number.group(1)) if number else 0


def _current_best(run_dir, latest_step):
  """(prefix, step, state) of best/ when its evaluations reach
  `latest_step`, else None; and the state either way."""
  state = read_state(run_dir)
  if not state or state.get("best_step") is None:
    return None, state
  evaluated_to = max(int(s) for s in state["history"])
  if evaluated_to < latest_step:
    return None, state
  step = state["best_step"]
  return Choice(_prefix(os.path.join(run_dir, DIRECTORY), step), step,
                "the best on dev (%s = %.6f at step %d)" % (
                    state["metric"], state["history"][str(step)], step)), state


def choose(path, weights=None):
  """The Choice of weights to read from `path` (a checkpoint, or a
  directory: a run's output_dir, or one holding a checkpoint), as the
  module docstring says; `weights`: None, "best", "latest" or a checkpoint
  path. Logs one line. FileNotFoundError where there is none."""
  if weights not in (None,) + CHOICES:
    prefix = tf_format.resolve(weights)
    choice = Choice(prefix, checkpoint_step(prefix), "as --weights names it")
  elif tf_format.is_prefix(path) or not tf.io.gfile.isdir(path):
    if weights is not None:
      raise UserError("--weights=%s picks among the checkpoints of a run's directory; %s is "
                      "one checkpoint already." % (weights, path))
    prefix = tf_format.resolve(path)
    choice = Choice(prefix, checkpoint_step(prefix), "as given")
  else:
    choice = _choose_in_directory(path, weights)
  logging.info("Reading the weights of %s: %s.", choice.prefix, choice.why)
  return choice


def _choose_in_directory(run_dir, weights):
  latest = tf.train.latest_checkpoint(run_dir)
  latest_step = checkpoint_step(latest) if latest else 0
  best, state = _current_best(run_dir, latest_step)
  if weights == "best":
    if best is None:
      raise UserError("--weights=best: %s has no best weights of its latest training (%s). "
                      "Leave --weights out to read the latest checkpoint." % (
                          run_dir, "no best/%s" % HISTORY if not state else
                          "best/ holds evaluations up to step %d only" %
                          max(int(s) for s in state["history"])))
    return best
  if best is not None and weights is None:
    if latest:
      return dataclasses.replace(best, why=best.why + "; the latest checkpoint, step %d, "
                                 "is read with --weights=latest" % latest_step)
    return best
  if latest is None:
    raise FileNotFoundError("No checkpoint found in directory %s." % run_dir)
  why = "the latest checkpoint (step %d)" % latest_step
  if best is not None:
    why += ", as --weights=latest asks; best/ holds %s" % best.why
  elif state and state.get("best_step") is not None:
    why += "; best/ was passed over: its evaluations end at step %d, before this training" % (
        max(int(s) for s in state["history"]))
  return Choice(latest, latest_step, why)
