"""The one training driver of every run_*.py: the training loop, resuming it,
and the optimizer the settings ask for.

    settings = TrainingSettings(output_dir="out", num_train_steps=1000,
                                train_batch_size=32, learning_rate=2e-5,
                                num_warmup_steps=100)
    result = train(strategy, model, losses.ModelLoss(model), dataset_fn, settings)

A custom loop rather than `model.fit`: it runs the same way on one device,
several GPUs (MirroredStrategy), several machines (MultiWorkerMirroredStrategy,
where `fit` failed for us on PerReplica values) and TPUs, and gives the
original's semantics exactly:
  * the loss of a step is the loss of the whole global batch, however it is
    split across replicas or micro-batches (each replica contributes its part
    of the global sums), so the update equals one device's on that batch;
  * `iterations_per_loop` steps run inside one compiled function;
  * checkpoints every `save_checkpoints_steps` and at the end (model,
    optimizer, step), resumed automatically from `output_dir`, with the input
    position restored by skipping the batches already consumed;
  * a NaN or infinite loss stops training before the bad weights are saved;
  * SIGTERM (a preemptible machine about to stop) ends the run after the
    current step, with a checkpoint at that step; the same command run again
    continues from it and ends with the weights an uninterrupted run has.
    tf.distribute.experimental.PreemptionCheckpointHandler is not used: it
    checks between calls of the training function, and one call runs
    `iterations_per_loop` steps (1000 by default), too long to wait; here the
    compiled loop itself reads the request before each step. Under
    MultiWorkerMirroredStrategy the request is per worker: send it to all;
  * optionally, a callback every N steps (the fine-tuning driver's dev
    evaluation, tasks/driver.py) that can stop training early.

The loop's parts, in the order a run meets them: `_resume` (the step to
start from), `_input_iterator`, `_replica_step` (one step of one replica,
its batch split into micro-batches by `_micro_batch_gradients`),
`_compiled_steps` (many steps in one tf.function), then, chunk by chunk in
`_train_until`: `_run_chunk` (the chunk's calls, with progress lines and
the time left), `_check_finite`, `_report_progress` (log line and
TensorBoard), `_stop_if_requested` (SIGTERM), `_save`, `_stops_early`.
Strategies come from modeling/strategy.py, the checkpoints' contents and
loading from modeling/checkpoints/loading.py.
"""

import contextlib
import dataclasses
import os
import time
from typing import Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from modeling.checkpoints import loading
from modeling import optimization
from modeling.strategy import is_chief
from plumbing.errors import Stopped
from plumbing.errors import UserError
from plumbing import files
from plumbing import progress
from plumbing.run_directory import lock as run_lock
from plumbing.run_directory import settings as run_settings
from plumbing import stop_request


class NonFiniteLossError(UserError, FloatingPointError):
  """The training loss became NaN or infinite."""


@dataclasses.dataclass(frozen=True)
class TrainingSettings(object):
  """How to train: the values of the scripts' training flags (run_flags.py).

  The schedule is the original's: linear warm-up over `num_warmup_steps`,
  then linear decay to 0 at `num_train_steps`. `keep_checkpoint_max=0` keeps
  every checkpoint. `mixed_precision="mixed_float16"` adds loss scaling (the
  dtype policy itself is set with the strategy, before the model is built).
  """
  output_dir: str
  num_train_steps: int
  train_batch_size: int
  learning_rate: float = 5e-5
  num_warmup_steps: int = 0
  init_checkpoint: Optional[str] = None
  optimizer: str = "adamw"
  mixed_precision: Optional[str] = None
  save_checkpoints_steps: int = 1000
  iterations_per_loop: int = 1000
  keep_checkpoint_max: int = 5
  gradient_accumulation_steps: int = 1
  use_xla: bool = False
  weight_decay_rate: float = 0.01
  adam_bias_correction: bool = False
  adam_epsilon: float = 1e-6
  decay_after_warmup: bool = False
  clip_dense_norm: bool = False
  # What the run records as its settings when it starts (plumbing/run_directory).
  recorded_settings: Optional[dict] = None


def fine_tuning_steps(num_examples, train_batch_size, num_train_epochs, warmup_proportion):
  """(training steps, warm-up steps) for epochs over `num_examples`, rounded
  down as the original did."""
  num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
  return num_train_steps, int(num_train_steps * warmup_proportion)


def create_optimizer(settings):
  """The settings' optimizer and schedule; loss-scaled under mixed_float16.
  Call under the strategy's scope."""
  optimizer = optimization.create_optimizer(
      settings.learning_rate, settings.num_train_steps, settings.num_warmup_steps,
      optimizer=settings.optimizer, weight_decay_rate=settings.weight_decay_rate,
      adam_bias_correction=settings.adam_bias_correction, adam_epsilon=settings.adam_epsilon,
      decay_after_warmup=settings.decay_after_warmup, clip_dense_norm=settings.clip_dense_norm)
  if settings.mixed_precision == "mixed_float16":
    optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
  return optimizer


class TrainResult(object):
  """What train() ends with: the last step, its loss, and examples per second."""

  def __init__(self, step, loss, examples_per_second):
    self.step = step
    self.loss = loss
    self.examples_per_second = examples_per_second


def train(strategy, model, loss_fn, dataset_fn, settings, counts=(), optimizer=None,
          stop_after_steps=None, evaluate_every=None, deferred=None):
  """Trains `model` (built under `strategy.scope()`) to
  `settings.num_train_steps`, resuming from the latest checkpoint in
  `settings.output_dir` (else starting from `settings.init_checkpoint`).

  dataset_fn(per_replica_batch_size, input_context) -> tf.data.Dataset of
  per-replica batches, repeated. loss_fn: one of modeling.losses. `counts`:
  (name, number) pairs to log with the batch size and steps, as the original
  did ("Num examples", ...). The optimizer is `create_optimizer(settings)`;
  one given instead brings its own schedule (the settings' learning rate,
  warm-up and optimizer name are then not used). `stop_after_steps` ends the
  run early (for tests of resuming). `evaluate_every`: (steps, callback);
  callback(step) runs every that many steps and at the end, and returning
  True stops training there (early stopping; a checkpoint is saved). While
  it trains, another run cannot train into the same output_dir
  (plumbing/run_directory/lock.py); `settings.recorded_settings` is
  recorded there first. `deferred`: as load_weights'.
  """
  files.makedirs(settings.output_dir)
  chief = is_chief(strategy)
  with run_lock.hold(settings.output_dir) if chief else contextlib.nullcontext():
    if chief and settings.recorded_settings is not None:
      run_settings.write(settings.output_dir, settings.recorded_settings)
    return _train(strategy, model, loss_fn, dataset_fn, settings, counts, optimizer,
                  stop_after_steps, evaluate_every, deferred)


@dataclasses.dataclass
class _Run(object):
  """What the parts of one training run share."""
  settings: TrainingSettings
  optimizer: keras.optimizers.Optimizer
  manager: tf.train.CheckpointManager
  step: tf.Variable  # The global step, saved in every checkpoint.
  # Set from a helper thread when SIGTERM arrives (plumbing/stop_request.py);
  # read by the compiled loop before each step.
  stop_requested: tf.Variable
  writer: tf.summary.SummaryWriter


def _train(strategy, model, loss_fn, dataset_fn, settings, counts, optimizer,
           stop_after_steps, evaluate_every, deferred):
  """train() inside the run's lock: sets the run up, then runs its steps."""
  _log_start(settings, counts)
  per_replica = _per_replica_batch_size(strategy, settings)
  ckpt_dir = _checkpoint_dir(strategy, settings.output_dir)
  with strategy.scope():
    if optimizer is None:
      optimizer = create_optimizer(settings)
    # Slots are created now, not lazily inside the compiled loop (which
    # fails under MirroredStrategy) and before a restore fills them.
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    checkpoint = loading.run_checkpoint(model, optimizer, step)
  manager = tf.train.CheckpointManager(checkpoint, ckpt_dir,
                                       max_to_keep=settings.keep_checkpoint_max or None,
                                       checkpoint_name="ckpt")
  start_step = _resume(checkpoint, manager, step, model, settings.init_checkpoint, deferred)
  if start_step >= settings.num_train_steps:
    logging.info("Already at step %d of %d.", start_step, settings.num_train_steps)
    return TrainResult(start_step, None, 0.0)
  iterator = _input_iterator(strategy, dataset_fn, per_replica, start_step)
  step_fn = _replica_step(model, loss_fn, optimizer, settings.gradient_accumulation_steps)
  if settings.use_xla:
    step_fn = tf.function(step_fn, jit_compile=True)
  stop_requested = tf.Variable(False, trainable=False, name="stop_requested")
  run_steps = _compiled_steps(strategy, step_fn, iterator, step, stop_requested)
  run = _Run(settings, optimizer, manager, step, stop_requested,
             _summary_writer(strategy, settings.output_dir))
  end_step = settings.num_train_steps if stop_after_steps is None else min(
      settings.num_train_steps, start_step + stop_after_steps)
  with stop_request.watch(lambda signum: stop_requested.assign(True)):
    result = _train_until(run, run_steps, start_step, end_step, evaluate_every)
  run.writer.flush()
  if ckpt_dir != settings.output_dir and tf.io.gfile.exists(ckpt_dir):
    # A non-chief worker's scratch copy, wherever it is (gs:// too).
    tf.io.gfile.rmtree(ckpt_dir)
  return result


def _log_start(settings, counts):
  logging.info("***** Running training *****")
  for name, count in counts:
    logging.info("  %s = %d", name, count)
  logging.info("  Batch size = %d", settings.train_batch_size)
  logging.info("  Num steps = %d", settings.num_train_steps)


def _per_replica_batch_size(strategy, settings):
  """Each replica's part of the global batch, which its micro-batches split
  evenly."""
  num_replicas = strategy.num_replicas_in_sync
  accumulation = settings.gradient_accumulation_steps
  if settings.train_batch_size % (num_replicas * accumulation):
    raise UserError(
        "The batch size %d must be divisible by replicas (%d) x "
        "gradient_accumulation_steps (%d)." %
        (settings.train_batch_size, num_replicas, accumulation))
  return settings.train_batch_size // num_replicas


def _checkpoint_dir(strategy, output_dir):
  """Non-chief workers must save too, but to a scratch directory."""
  if is_chief(strategy):
    return output_dir
  return os.path.join(output_dir, "worker_tmp_%d" % strategy.cluster_resolver.task_id)


def _resume(checkpoint, manager, step, model, init_checkpoint, deferred):
  """The step training starts from: the run's latest checkpoint restored
  (weights, optimizer, step, dropout state), else the weights of
  `init_checkpoint` at step 0."""
  if manager.latest_checkpoint:
    loading.resume(checkpoint, manager)
    logging.info("Resuming from %s at step %d.", manager.latest_checkpoint, int(step.numpy()))
    if deferred:
      deferred.cancel()
  else:
    loading.load_weights(model, init_checkpoint, deferred)
  return int(step.numpy())


def _input_iterator(strategy, dataset_fn, per_replica, start_step):
  """The distributed batches from `start_step` on: those trained on already
  are skipped, so a resumed run reads what an uninterrupted one would."""

  def make_dataset(input_context):
    local_replicas = input_context.num_replicas_in_sync // input_context.num_input_pipelines
    dataset = dataset_fn(per_replica, input_context)
    return dataset.skip(start_step * local_replicas)

  return iter(strategy.distribute_datasets_from_function(make_dataset))


def _replica_step(model, loss_fn, optimizer, micro_batches):
  """replica_step(features) -> loss: one training step of one replica. The
  loss's batch-wide totals are summed over all replicas first, so each
  replica's loss is its share of the global batch's."""
  variables = model.trainable_variables

  def replica_step(features):
    totals = loss_fn.totals(features)
    context = tf.distribute.get_replica_context()
    totals = {k: context.all_reduce(tf.distribute.ReduceOp.SUM, v) for k, v in totals.items()}
    grads, loss = _micro_batch_gradients(model, loss_fn, optimizer, variables, features,
                                         totals, micro_batches)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  return replica_step


def _micro_batch_gradients(model, loss_fn, optimizer, variables, features, totals, count):
  """(gradients, loss) of `features` as `count` micro-batches, one at a time
  (gradient accumulation: less memory). Each micro-batch's loss is its share
  of the global batch's, so the sums are the whole batch's."""
  grads = None
  loss = 0.0
  for micro in split_micro_batches(features, count):
    with tf.GradientTape() as tape:
      micro_loss = loss_fn(model, micro, totals)
      scaled = optimizer.scale_loss(micro_loss)  # Loss scaling under float16.
    micro_grads = tape.gradient(scaled, variables)
    grads = micro_grads if grads is None else [
        add_gradients(a, b) for a, b in zip(grads, micro_grads)]
    loss += micro_loss
  return grads, loss


def split_micro_batches(features, count):
  """Splits every feature along the batch axis into `count` equal parts."""
  if count == 1:
    return [features]
  parts = {k: tf.split(v, count, axis=0) for k, v in features.items()}
  return [{k: parts[k][i] for k in features} for i in range(count)]


def add_gradients(a, b):
  """a + b; two IndexedSlices stay slices (all of them, as one batch would
  have them), which the optimizer's clipping counts as the original did."""
  if isinstance(a, tf.IndexedSlices) and isinstance(b, tf.IndexedSlices):
    return tf.IndexedSlices(tf.concat([a.values, b.values], 0),
                            tf.concat([a.indices, b.indices], 0), a.dense_shape)
  return tf.convert_to_tensor(a) + tf.convert_to_tensor(b)


def _compiled_steps(strategy, step_fn, iterator, step, stop_requested):
  """run_steps(n): up to n training steps in one tf.function."""

  @tf.function
  def run_steps(steps):
    """(last step's loss, mean loss of the steps, steps run): fewer than
    `steps` when a stop was requested."""
    loss = tf.constant(0.0)
    total = tf.constant(0.0)
    done = tf.constant(0, tf.int64)
    for _ in tf.range(steps):
      if stop_requested:
        break
      per_replica_loss = strategy.run(step_fn, args=(next(iterator),))
      loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
      total += loss
      done += 1
      step.assign_add(1)
    return loss, total / tf.cast(tf.maximum(done, 1), tf.float32), done

  return run_steps


def _summary_writer(strategy, output_dir):
  """TensorBoard's writer of output_dir/train; other workers than the chief
  write nothing."""
  if is_chief(strategy):
    return tf.summary.create_file_writer(os.path.join(output_dir, "train"))
  return tf.summary.create_noop_writer()


def _train_until(run, run_steps, step, end_step, evaluate_every):
  """Runs the compiled steps to `end_step`, in chunks that end at each
  checkpoint, evaluation and `iterations_per_loop` steps; the TrainResult."""
  settings = run.settings
  loss = None
  rate = 0.0
  eval_steps, evaluate = evaluate_every or (None, None)
  steps = progress.Progress("steps", end_step - step, verb="Trained")
  while step < end_step:
    chunk = _chunk_size(step, end_step, settings, eval_steps)
    started = time.time()
    loss, mean_loss, done = _run_chunk(run_steps, chunk, steps)
    elapsed = time.time() - started
    step = int(run.step.numpy())
    _check_finite(run, step, done, mean_loss)
    if done:
      rate = done * settings.train_batch_size / max(elapsed, 1e-9)
      _report_progress(run, step, loss, done, mean_loss, rate, steps.time_left())
    _stop_if_requested(run, step)
    if step % settings.save_checkpoints_steps == 0 or step == settings.num_train_steps:
      _save(run.manager, step)
    if eval_steps and _stops_early(run, step, eval_steps, evaluate):
      break
  return TrainResult(step, loss, rate)


def _run_chunk(run_steps, chunk, steps):
  """(last loss, mean loss, steps run) of `chunk` steps, run in calls short
  enough that `steps` (a Progress) logs a line about every minute: the
  first call runs one step, later ones as many as half a minute holds at
  the pace so far, so that a line falls due soon after each call ends. A stop request ends it early. The steps are the same
  however they are split into calls."""
  loss, total, done = None, 0.0, 0
  while done < chunk:
    per_call = 1 if steps.done == 0 else max(1, int(steps.every * steps.rate() / 2))
    size = min(chunk - done, per_call)
    last, mean, ran = run_steps(tf.constant(size, tf.int64))
    ran = int(ran)
    if ran:
      loss, total, done = float(last), total + float(mean) * ran, done + ran
    steps.advance(ran)
    if ran < size:
      break
  return loss, total / max(done, 1), done


def _chunk_size(step, end_step, settings, eval_steps):
  """How many steps the next call runs: at most `iterations_per_loop`, and
  none past the next checkpoint, evaluation or `end_step`."""
  save_every = settings.save_checkpoints_steps
  next_save = (step // save_every + 1) * save_every
  chunk = min(settings.iterations_per_loop, next_save - step, end_step - step)
  if eval_steps:
    chunk = min(chunk, (step // eval_steps + 1) * eval_steps - step)
  return chunk


def _check_finite(run, step, done, mean_loss):
  """Stops before the weights are saved if any step of the chunk had a
  non-finite loss (its mean is then not finite either)."""
  if done and not np.isfinite(mean_loss):
    raise NonFiniteLossError(
        "Loss is %s at step %d; stopping. The last good checkpoint is %s." %
        (mean_loss, step, run.manager.latest_checkpoint or "(none)"))


def _report_progress(run, step, loss, done, mean_loss, rate, time_left):
  """The chunk's log line (with the time left to the run's last step, at
  the pace of the steps since the first chunk, which also compiles), and
  its TensorBoard scalars."""
  learning_rate = float(run.optimizer.learning_rate)
  left = "" if time_left is None else ", about %s left" % progress.duration(time_left)
  logging.info("step %d/%d: loss = %.6f, mean of the last %d steps %.6f, "
               "%.1f examples/s, learning rate %.3g%s", step, run.settings.num_train_steps,
               loss, done, mean_loss, rate, learning_rate, left)
  with run.writer.as_default(step=step):
    # The loop's mean: one step's loss at small batches is mostly noise.
    tf.summary.scalar("loss", mean_loss)
    tf.summary.scalar("learning_rate", learning_rate)
    tf.summary.scalar("examples_per_second", rate)


def _stop_if_requested(run, step):
  """After SIGTERM, saves this step and ends the run; the same command run
  again continues from it."""
  if not bool(run.stop_requested.numpy()):
    return
  saved = _save(run.manager, step)
  run.writer.flush()
  raise Stopped("SIGTERM at step %d of %d; saved %s. Run the same command again "
                "to continue from there." % (step, run.settings.num_train_steps, saved))


def _stops_early(run, step, eval_steps, evaluate):
  """Runs the evaluation callback when one is due; True when it asks to stop
  (the step is then saved, if it was not already)."""
  num_train_steps = run.settings.num_train_steps
  if not (step % eval_steps == 0 or step == num_train_steps) or not evaluate(step):
    return False
  if step % run.settings.save_checkpoints_steps and step != num_train_steps:
    _save(run.manager, step)
  logging.info("Stopping early at step %d of %d: dev results stopped improving.",
               step, num_train_steps)
  return True


def _save(manager, step):
  """Saves checkpoint `step`; a save that fails (a full disk, most often)
  leaves no partial files behind, only the earlier checkpoints."""
  try:
    return manager.save(checkpoint_number=step)
  except BaseException:
    prefix = os.path.join(manager.directory, "ckpt-%d" % step)
    for leftover in tf.io.gfile.glob(prefix + "_temp*") + tf.io.gfile.glob(prefix + ".*"):
      try:
        if tf.io.gfile.isdir(leftover):
          tf.io.gfile.rmtree(leftover)
        else:
          tf.io.gfile.remove(leftover)
      except (OSError, tf.errors.OpError):
        pass  # The save's own error is the one to report.
    raise
