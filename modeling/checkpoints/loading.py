"""A training run's own checkpoints, and the weights a model starts from.

A run writes object-based checkpoints of `run_checkpoint(...)` (model,
optimizer, step, dropout random state) into its output directory and
resumes from the latest (`resume`); a new run starts from
`--init_checkpoint`, of either TensorFlow kind (`load_weights`); evaluation
and prediction read the run's weights that best.choose picks (its best on
dev, else its latest checkpoint), else the init ones (`load_for_inference`).
"""

import os

import tensorflow as tf

from modeling.checkpoints import best
from modeling.checkpoints import tf_format


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


def run_checkpoint(model, optimizer, step):
  """What a training run saves, so that resuming continues it exactly."""
  return tf.train.Checkpoint(model=model, optimizer=optimizer, step=step,
                             dropout_rng=dropout_rng_states(model))


def resume(checkpoint, manager):
  """Restores `checkpoint` from the latest of `manager`; a damaged one stops
  with one line saying how to resume from the one before it."""
  latest = manager.latest_checkpoint
  with tf_format.reporting_damage(latest, _resume_advice(manager)):
    checkpoint.restore(latest).assert_existing_objects_matched()


def _resume_advice(manager):
  """What to do when the latest checkpoint of a run cannot be read."""
  latest = manager.latest_checkpoint
  earlier = [c for c in manager.checkpoints if c != latest]
  state = os.path.join(manager.directory, "checkpoint")
  if not earlier:
    return ("Delete %s.* and %s to train from the start." % (latest, state))
  return ("To resume from the checkpoint before it, delete %s.* and set the first line "
          "of %s to: model_checkpoint_path: \"%s\"" %
          (latest, state, os.path.basename(earlier[-1])))


def load_for_inference(model, output_dir, init_checkpoint=None, deferred=None, weights=None):
  """Loads the weights of the run in `output_dir` that best.choose picks
  (`weights`: its choice), else those of `init_checkpoint` (else the model
  keeps its initialisation); returns the global step, which is 0 unless the
  weights come from a training run in `output_dir`. `deferred`: as
  load_weights'."""
  if weights is not None or _holds_weights(output_dir):
    return load_weights(model, output_dir, deferred, weights).step
  load_weights(model, init_checkpoint, deferred)
  return 0


def _holds_weights(output_dir):
  return bool(tf.train.latest_checkpoint(output_dir) or best.read_state(output_dir))


def load_weights(model, checkpoint, deferred=None, weights=None):
  """Loads `checkpoint` (either kind; a directory: the checkpoint of it that
  best.choose picks, `weights` its choice; None: nothing) into `model`;
  returns best.choose's Choice (None for nothing).

  `deferred`: the model's random weights not drawn yet
  (deferred_init.deferred_initialization); those the checkpoint does not give a
  value are drawn, as they would have been at construction.
  """
  if not checkpoint:
    if deferred:
      deferred.initialize()
    return None
  choice = best.choose(checkpoint, weights)
  checkpoint = choice.prefix
  loaded = tf_format.load_checkpoint(model, checkpoint)
  if not deferred:
    return choice
  if isinstance(loaded, tf_format.LoadReport):  # The original's format: by name.
    deferred.initialize(except_for=loaded.assigned)
  elif tf_format.matched_every_object(loaded):
    deferred.cancel()
  else:  # Draw them all, then load again over the drawn ones.
    deferred.initialize()
    tf_format.load_checkpoint(model, checkpoint, log=False)
  return choice
