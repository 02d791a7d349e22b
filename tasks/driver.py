"""The one fine-tuning driver: train, evaluate, predict and export any kind
of task, in the original run_classifier.py's order.

    driver.run(task, settings, strategy, config)

A kind of task (`Task` below: classification, SQuAD, SWAG, tagging) says
what is particular to it: its examples per split, how they become records
and are read back, its model (whose heads declare the loss), how the model's outputs become
results and prediction files, and its export. The driver does the rest the
same way for all: building the model without drawing the weights a
checkpoint replaces, training (resumed when run again), the best weights on
dev (--eval_every_steps), the dev records written once per run, eval_results.txt,
and the order of the steps. Settings are plain values (run_flags.py makes
them from the flags).
"""

import dataclasses
import os
from typing import Optional

from absl import logging
import tensorflow as tf

import modeling
from modeling import checkpoints
from modeling.checkpoints import best as best_weights
from modeling import losses
from modeling import training
from modeling.checkpoints import loading
from plumbing.errors import UserError
from plumbing import files
from plumbing import tf_example

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class Settings(object):
  """What to run and how: the fine-tuning scripts' shared flags.

  `training` is the TrainingSettings of the run but for its step counts,
  which come from the training examples, `num_train_epochs` and
  `warmup_proportion` (rounded down, as the original). `trim_to_multiple`:
  None runs every batch at the records' length, else the multiple each
  batch's length is rounded up to. `weights`: which of the run's weights
  evaluation, prediction and export read (checkpoints.best.choose).
  """
  output_dir: str
  training: training.TrainingSettings
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  export_dir: Optional[str] = None
  init_checkpoint: Optional[str] = None
  num_train_epochs: float = 3.0
  warmup_proportion: float = 0.1
  seed: int = 12345
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  trim_to_multiple: Optional[int] = None
  group_by_length: bool = False
  train_shuffle_buffer: int = 100
  eval_every_steps: int = 0
  early_stopping_patience: int = 0
  head_initializer: str = "truncated_normal"
  weights: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Export(object):
  """What a task's export needs besides the model and its own settings: the
  tokenizer's, the precision and the request limits
  (serving.export.RequestLimits)."""
  vocab_file: str
  do_lower_case: bool
  precision: str = "float32"
  limits: Optional[object] = None


class Task(object):
  """A kind of task, as the driver sees it. Subclasses give the methods that
  raise NotImplementedError; the rest have the common behaviour."""

  # Each split's record file in --output_dir (the original's names).
  record_names = {"train": "train.tf_record", "dev": "eval.tf_record",
                  "test": "predict.tf_record"}
  # The result --eval_every_steps keeps the best weights by.
  best_metric = "eval_accuracy"
  # The features besides the model's inputs that run along the sequence (a
  # tagger's labels): batches cut to their longest row cut these too.
  along_sequence = ()

  def examples(self, split):
    """The examples of "train", "dev" or "test"; an error if there are none."""
    raise NotImplementedError

  def build_model(self, config, head_initializer="truncated_normal"):
    """The task's model; its new head's weights drawn as `head_initializer`
    (a name in modeling.blocks.layers.INITIALIZERS) says."""
    raise NotImplementedError

  def write_records(self, examples, path, split):
    """Writes the examples' records to `path`; returns what turning outputs
    back into results needs besides the examples (None: nothing)."""
    raise NotImplementedError

  def example_spec(self, is_training):
    """The plumbing.tf_example.ExampleSpec of the records write_records
    writes (with `is_training`, of the training split's); the driver reads
    them."""
    raise NotImplementedError

  def training_counts(self, examples, written):
    """(name, number) pairs the training log starts with."""
    return [("Num examples", len(examples))]

  def outputs(self, strategy, model, records, examples, written, batch_size,
              trim_to_multiple):
    """The model's outputs over the records (numpy, in record order)."""
    raise NotImplementedError

  def results(self, examples, written, outputs, batch_size):
    """The dev results (eval_results.txt's keys and values)."""
    raise NotImplementedError

  def write_predictions(self, examples, written, outputs, output_dir):
    """The test split's prediction files in `output_dir`."""
    raise NotImplementedError

  def export(self, model, export_dir):
    """A SavedModel of `model` for TF Serving in `export_dir`."""
    raise NotImplementedError


def write_eval_results(output_dir, results, step):
  """Writes eval_results.txt in `output_dir` as the original did (`key =
  value` lines in sorted key order, with `global_step`) and logs it."""
  results = dict(results, global_step=step)
  files.write_text(os.path.join(output_dir, "eval_results.txt"), "".join(
      "%s = %s\n" % (key, str(results[key])) for key in sorted(results)))
  logging.info("***** Eval results *****")
  for key in sorted(results):
    logging.info("  %s = %s", key, str(results[key]))


def batch_size_of(strategy, value, flag_name):
  """A batch size, which must split evenly over the replicas."""
  if value % strategy.num_replicas_in_sync:
    raise UserError("--%s=%d must be divisible by the %d replicas." %
                    (flag_name, value, strategy.num_replicas_in_sync))
  return value


class _Run(object):
  """One run of the driver: the task, its model, and what is written once."""

  def __init__(self, task, settings, strategy, model):
    self.task, self.settings, self.strategy, self.model = task, settings, strategy, model
    self._dev = None

  def _split(self, split, batch_flag):
    """(examples, written, outputs) of the dev or test split."""
    s, task = self.settings, self.task
    if split == "dev" and self._dev is not None:
      examples, written, path = self._dev
    else:
      examples = task.examples(split)
      path = os.path.join(s.output_dir, task.record_names[split])
      written = task.write_records(examples, path, split)
      if split == "dev":
        self._dev = (examples, written, path)
    batch_size = batch_size_of(self.strategy, getattr(s, batch_flag), batch_flag)
    records = tf_example.read_records(path, task.example_spec(is_training=False))
    outputs = task.outputs(self.strategy, self.model, records, examples, written, batch_size,
                           s.trim_to_multiple)
    return examples, written, outputs

  def dev_results(self):
    examples, written, outputs = self._split("dev", "eval_batch_size")
    return self.task.results(examples, written, outputs, self.settings.eval_batch_size)

  def train(self, best, deferred):
    s, task = self.settings, self.task
    examples = task.examples("train")
    path = os.path.join(s.output_dir, task.record_names["train"])
    written = task.write_records(examples, path, "train")
    steps, warmup = training.fine_tuning_steps(
        len(examples), s.training.train_batch_size, s.num_train_epochs, s.warmup_proportion)
    counts = task.training_counts(examples, written)
    del examples, written

    def dataset_fn(per_replica_batch, input_context):
      records = tf_example.read_records(path, task.example_spec(is_training=True),
                                        is_training=True, seed=s.seed,
                                        input_context=input_context,
                                        shuffle_buffer=s.train_shuffle_buffer)
      return tf_example.batched(records, per_replica_batch, drop_remainder=True,
                                trim_to_multiple=s.trim_to_multiple,
                                group_by_length=s.group_by_length,
                                along_sequence=task.along_sequence)
    evaluate_every = best and (s.eval_every_steps, lambda step: best.record(
        step, self.dev_results()))
    return training.train(
        self.strategy, self.model, losses.ModelLoss(self.model), dataset_fn,
        dataclasses.replace(s.training, num_train_steps=steps, num_warmup_steps=warmup),
        counts=counts, evaluate_every=evaluate_every, deferred=deferred).step


def _weights_after_training(model, output_dir, weights):
  """What evaluation, prediction and export read after training: the
  weights checkpoints.best.choose picks; the model holds the latest already.
  Returns their step."""
  choice = best_weights.choose(output_dir, weights)
  if choice.prefix != tf.train.latest_checkpoint(output_dir):
    checkpoints.load_checkpoint(model, choice.prefix)
  return choice.step


def run(task, settings, strategy, config):
  """Trains, evaluates, predicts and exports, as `settings` ask."""
  s = settings
  files.makedirs(s.output_dir)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = task.build_model(config, head_initializer=s.head_initializer)
  this = _Run(task, s, strategy, model)
  best = None
  if s.eval_every_steps:
    if not (s.do_train and s.do_eval):
      raise UserError("--eval_every_steps needs --do_train and --do_eval: it evaluates on "
                      "the dev set while training.")
    best = best_weights.BestModel(model, s.output_dir, task.best_metric,
                                  s.early_stopping_patience)
  if s.do_train and best and best.stopped_at:
    logging.info("This run stopped early at step %d before.", best.stopped_at)
    step = loading.load_for_inference(model, s.output_dir, deferred=deferred,
                                       weights=s.weights)
  elif s.do_train:
    this.train(best, deferred)
    step = _weights_after_training(model, s.output_dir, s.weights)
  else:
    step = loading.load_for_inference(model, s.output_dir, s.init_checkpoint, deferred,
                                       s.weights)

  if s.do_eval:
    logging.info("***** Running evaluation *****")
    write_eval_results(s.output_dir, this.dev_results(), step)
  if s.do_predict:
    logging.info("***** Running prediction *****")
    task.write_predictions(*this._split("test", "predict_batch_size"), s.output_dir)
  if s.export_dir:
    task.export(model, s.export_dir)
    logging.info("Exported a SavedModel to %s", s.export_dir)
  return model
