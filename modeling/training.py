"""The one training driver of every run_*.py: strategies, the training loop,
resuming, and loading a trained model for inference.

    settings = TrainingSettings(output_dir="out", num_train_steps=1000,
                                train_batch_size=32, learning_rate=2e-5,
                                num_warmup_steps=100)
    result = train(strategy, model, losses.ClassifierLoss(), dataset_fn, settings)

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
"""

import contextlib
import dataclasses
import os
import shutil
import time
from typing import Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from modeling import checkpoints
from modeling import optimization
from plumbing.errors import Stopped
from plumbing.errors import UserError
from plumbing import files
from plumbing import run_lock
from plumbing import stop_request


class NonFiniteLossError(UserError, FloatingPointError):
  """The training loss became NaN or infinite."""


def split_cpu(count):
  """Makes `count` logical CPU devices, so that multi-replica strategies can be
  exercised on a machine without accelerators. Call before TensorFlow runs."""
  if count > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def create_strategy(name=None, num_gpus=0, use_tpu=False, tpu_name=None,
                    tpu_zone=None, gcp_project=None, master=None):
  """The tf.distribute strategy the flags ask for.

  With no name: `tpu` if use_tpu, `mirrored` with more than one GPU, else
  `one_device` (TensorFlow's default strategy). `mirrored` on a machine without GPUs mirrors over the logical
  CPU devices (useful for tests).
  """
  if name == "multi_worker_mirrored":  # Before anything initialises the runtime.
    return tf.distribute.MultiWorkerMirroredStrategy()
  if not name:
    physical = tf.config.list_physical_devices("GPU")
    name = "tpu" if use_tpu else (
        "mirrored" if len(physical[:num_gpus or None]) > 1 else "one_device")
  gpus = tf.config.list_logical_devices("GPU")
  if num_gpus:
    gpus = gpus[:num_gpus]
  if name == "one_device":
    # TensorFlow's default strategy: one replica, ops placed as usual (on the
    # first GPU if there is one). OneDeviceStrategy computes the same but
    # copies each step's input, which small models notice.
    return tf.distribute.get_strategy()
  if name == "mirrored":
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
  if name == "tpu":
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=tpu_name or master or "", zone=tpu_zone, project=gcp_project)
      tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, OSError, tf.errors.OpError) as e:
      raise UserError(
          "No TPU could be reached (--tpu_name=%r, --tpu_zone=%r, --gcp_project=%r): "
          "%s" % (tpu_name, tpu_zone, gcp_project, e)) from None
    return tf.distribute.TPUStrategy(resolver)
  raise UserError("Unknown --distribution_strategy %r." % name)


def _is_chief(strategy):
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  return resolver.task_type in (None, "chief") or (
      resolver.task_type == "worker" and resolver.task_id == 0 and
      "chief" not in resolver.cluster_spec().as_dict())


def _checkpoint_dir(strategy, output_dir):
  """Non-chief workers must save too, but to a scratch directory."""
  if _is_chief(strategy):
    return output_dir
  return os.path.join(output_dir, "worker_tmp_%d" % strategy.cluster_resolver.task_id)


def dropout_rng_states(model):
  """The random-number state of every dropout layer.

  Keras keeps it in SeedGenerator objects that TensorFlow checkpoints do not
  see; saving it is what makes a resumed run draw the same dropout masks as
  an uninterrupted one.
  """
  states = []
  for layer in model._flatten_layers(include_self=True, recursive=True):  # pylint: disable=protected-access
    for generator in getattr(layer, "_seed_generators", []):
      states.append(generator.state)
  return states


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
  (plumbing/run_lock.py). `deferred`: as load_weights'.
  """
  files.makedirs(settings.output_dir)
  lock = run_lock.hold(settings.output_dir) if _is_chief(strategy) else contextlib.nullcontext()
  with lock:
    return _train(strategy, model, loss_fn, dataset_fn, settings, counts, optimizer,
                  stop_after_steps, evaluate_every, deferred)


def _train(strategy, model, loss_fn, dataset_fn, settings, counts, optimizer,
           stop_after_steps, evaluate_every, deferred):
  num_train_steps = settings.num_train_steps
  logging.info("***** Running training *****")
  for name, count in counts:
    logging.info("  %s = %d", name, count)
  logging.info("  Batch size = %d", settings.train_batch_size)
  logging.info("  Num steps = %d", num_train_steps)
  global_batch_size = settings.train_batch_size
  gradient_accumulation_steps = settings.gradient_accumulation_steps
  save_checkpoints_steps = settings.save_checkpoints_steps
  output_dir = settings.output_dir
  num_replicas = strategy.num_replicas_in_sync
  if global_batch_size % (num_replicas * gradient_accumulation_steps):
    raise UserError(
        "The batch size %d must be divisible by replicas (%d) x "
        "gradient_accumulation_steps (%d)." %
        (global_batch_size, num_replicas, gradient_accumulation_steps))
  per_replica = global_batch_size // num_replicas
  ckpt_dir = _checkpoint_dir(strategy, output_dir)
  with strategy.scope():
    if optimizer is None:
      optimizer = create_optimizer(settings)
    # Slots are created now, not lazily inside the compiled loop (which
    # fails under MirroredStrategy) and before a restore fills them.
    optimizer.build(model.trainable_variables)
    step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step_var,
                                     dropout_rng=dropout_rng_states(model))
  manager = tf.train.CheckpointManager(checkpoint, ckpt_dir,
                                       max_to_keep=settings.keep_checkpoint_max or None,
                                       checkpoint_name="ckpt")
  if manager.latest_checkpoint:
    with checkpoints.reporting_damage(manager.latest_checkpoint,
                                      _resume_advice(manager, ckpt_dir)):
      checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
    logging.info("Resuming from %s at step %d.", manager.latest_checkpoint, int(step_var.numpy()))
    if deferred:
      deferred.cancel()
  else:
    load_weights(model, settings.init_checkpoint, deferred)
  start_step = int(step_var.numpy())
  if start_step >= num_train_steps:
    logging.info("Already at step %d of %d.", start_step, num_train_steps)
    return TrainResult(start_step, None, 0.0)

  def make_dataset(input_context):
    local_replicas = input_context.num_replicas_in_sync // input_context.num_input_pipelines
    dataset = dataset_fn(per_replica, input_context)
    return dataset.skip(start_step * local_replicas)

  iterator = iter(strategy.distribute_datasets_from_function(make_dataset))
  variables = model.trainable_variables

  def replica_step(features):
    totals = loss_fn.totals(features)
    context = tf.distribute.get_replica_context()
    totals = {k: context.all_reduce(tf.distribute.ReduceOp.SUM, v) for k, v in totals.items()}
    grads = None
    loss = 0.0
    for micro in split_micro_batches(features, gradient_accumulation_steps):
      with tf.GradientTape() as tape:
        micro_loss = loss_fn(model, micro, totals)
        scaled = optimizer.scale_loss(micro_loss)  # Loss scaling under float16.
      micro_grads = tape.gradient(scaled, variables)
      grads = micro_grads if grads is None else [
          add_gradients(a, b) for a, b in zip(grads, micro_grads)]
      loss += micro_loss
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  step_fn = tf.function(replica_step, jit_compile=True) if settings.use_xla else replica_step

  # Set from a helper thread when SIGTERM arrives (plumbing/stop_request.py);
  # read by the compiled loop before each step.
  stop_requested = tf.Variable(False, trainable=False, name="stop_requested")

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
      step_var.assign_add(1)
    return loss, total / tf.cast(tf.maximum(done, 1), tf.float32), done

  writer = tf.summary.create_file_writer(os.path.join(output_dir, "train")) \
      if _is_chief(strategy) else tf.summary.create_noop_writer()
  end_step = num_train_steps if stop_after_steps is None else min(
      num_train_steps, start_step + stop_after_steps)
  step = start_step
  loss = None
  rate = 0.0
  eval_steps, evaluate = evaluate_every or (None, None)
  with stop_request.watch(lambda signum: stop_requested.assign(True)):
    while step < end_step:
      next_save = (step // save_checkpoints_steps + 1) * save_checkpoints_steps
      chunk = min(settings.iterations_per_loop, next_save - step, end_step - step)
      if eval_steps:
        chunk = min(chunk, (step // eval_steps + 1) * eval_steps - step)
      started = time.time()
      loss, mean_loss, done = run_steps(tf.constant(chunk, tf.int64))
      loss, mean_loss, done = float(loss), float(mean_loss), int(done)
      elapsed = time.time() - started
      step = int(step_var.numpy())
      if done and not np.isfinite(mean_loss):  # Any non-finite step of the loop.
        raise NonFiniteLossError(
            "Loss is %s at step %d; stopping. The last good checkpoint is %s." %
            (mean_loss, step, manager.latest_checkpoint or "(none)"))
      if done:
        rate = done * global_batch_size / max(elapsed, 1e-9)
        learning_rate = float(optimizer.learning_rate)
        logging.info("step %d/%d: loss = %.6f, mean of the last %d steps %.6f, "
                     "%.1f examples/s, learning rate %.3g", step, num_train_steps, loss,
                     done, mean_loss, rate, learning_rate)
        with writer.as_default(step=step):
          # The loop's mean: one step's loss at small batches is mostly noise.
          tf.summary.scalar("loss", mean_loss)
          tf.summary.scalar("learning_rate", learning_rate)
          tf.summary.scalar("examples_per_second", rate)
      if bool(stop_requested.numpy()):
        saved = _save(manager, step)
        writer.flush()
        raise Stopped("SIGTERM at step %d of %d; saved %s. Run the same command again "
                      "to continue from there." % (step, num_train_steps, saved))
      if step % save_checkpoints_steps == 0 or step == num_train_steps:
        _save(manager, step)
      if eval_steps and (step % eval_steps == 0 or step == num_train_steps) and evaluate(step):
        if step % save_checkpoints_steps and step != num_train_steps:
          _save(manager, step)
        logging.info("Stopping early at step %d of %d: dev results stopped improving.",
                     step, num_train_steps)
        break
  writer.flush()
  if ckpt_dir != output_dir:
    shutil.rmtree(ckpt_dir, ignore_errors=True)
  return TrainResult(step, loss, rate)


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


def _resume_advice(manager, ckpt_dir):
  """What to do when the latest checkpoint of a run cannot be read."""
  latest = manager.latest_checkpoint
  earlier = [c for c in manager.checkpoints if c != latest]
  state = os.path.join(ckpt_dir, "checkpoint")
  if not earlier:
    return ("Delete %s.* and %s to train from the start." % (latest, state))
  return ("To resume from the checkpoint before it, delete %s.* and set the first line "
          "of %s to: model_checkpoint_path: \"%s\"" %
          (latest, state, os.path.basename(earlier[-1])))


def load_for_inference(model, output_dir, init_checkpoint=None, deferred=None):
  """Loads the latest checkpoint of `output_dir`, else `init_checkpoint`
  (else the model keeps its initialisation); returns the global step, which
  is 0 unless the weights come from a training run in `output_dir`.
  `deferred`: as load_weights'."""
  latest = tf.train.latest_checkpoint(output_dir)
  load_weights(model, latest or init_checkpoint, deferred)
  return latest_checkpoint_step(output_dir) if latest else 0


def load_weights(model, checkpoint, deferred=None):
  """Loads `checkpoint` (either kind; None: nothing) into `model`.

  `deferred`: the model's random weights not drawn yet
  (layers.deferred_initialization); those the checkpoint does not give a
  value are drawn, as they would have been at construction.
  """
  if not checkpoint:
    if deferred:
      deferred.initialize()
    return
  loaded = checkpoints.load_checkpoint(model, checkpoint)
  if not deferred:
    return
  if isinstance(loaded, checkpoints.LoadReport):  # The original's format: by name.
    deferred.initialize(except_for=loaded.assigned)
  elif checkpoints.matched_every_object(loaded):
    deferred.cancel()
  else:  # Draw them all, then load again over the drawn ones.
    deferred.initialize()
    checkpoints.load_checkpoint(model, checkpoint, log=False)


def latest_checkpoint_step(output_dir):
  latest = tf.train.latest_checkpoint(output_dir)
  if not latest:
    return 0
  return int(tf.train.load_checkpoint(latest).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
