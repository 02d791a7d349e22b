"""Options beyond the original: XLA compilation and mixed precision."""


import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import (MODELING_REF, PRETRAINING_FEATURES, data_file, reference_config,
                      reference_inputs, reference_outputs)
import modeling
from modeling import optimization

REF = MODELING_REF
_config = reference_config


def _features():
  inputs = reference_inputs()
  return {k: tf.constant(inputs[k]) for k in PRETRAINING_FEATURES}


_reference = reference_outputs


@pytest.fixture
def policy():
  """Sets a global dtype policy for the test and restores float32 after."""
  def set_policy(name):
    keras.mixed_precision.set_global_policy(name)
  yield set_policy
  keras.mixed_precision.set_global_policy("float32")


def _pretrainer(**config):
  model = modeling.BertPretrainer(_config(**config))
  modeling.load_original_checkpoint(model, data_file(REF + "model.ckpt"), log=False)
  return model


def test_xla_compiled_forward_matches_original():
  model = _pretrainer()
  compiled = tf.function(lambda x: (model.bert(x)["sequence_output"], model(x)),
                         jit_compile=True)
  sequence_output, out = compiled(_features())
  ref = _reference()
  np.testing.assert_allclose(sequence_output.numpy(), ref["sequence_output"], atol=1e-5)
  np.testing.assert_allclose(out["masked_lm_log_probs"].numpy(), ref["mlm_log_probs"], atol=1e-5)
  np.testing.assert_allclose(out["loss"].numpy(), ref["mlm_loss"] + ref["nsp_loss"], atol=1e-5)


@pytest.mark.parametrize("name,atol", [("mixed_bfloat16", 0.1), ("mixed_float16", 0.02)])
def test_mixed_precision_forward_tracks_float32(policy, name, atol):
  policy(name)
  model = _pretrainer()
  out = model(_features(), training=False)
  sequence_output = model.bert(_features())["sequence_output"]
  assert sequence_output.dtype == keras.mixed_precision.global_policy().compute_dtype
  assert out["loss"].dtype == tf.float32 and out["masked_lm_log_probs"].dtype == tf.float32
  assert all(v.dtype == "float32" for v in model.weights)
  ref = _reference()
  np.testing.assert_allclose(
      sequence_output.numpy().astype(np.float32), ref["sequence_output"], atol=atol)
  assert abs(float(out["loss"]) - float(ref["mlm_loss"] + ref["nsp_loss"])) < 0.01


def _train(model, optimizer, steps, loss_scale=False):
  features = _features()
  losses = []
  for _ in range(steps):
    with tf.GradientTape() as tape:
      loss = model(features, training=True)["loss"]
      scaled = optimizer.scale_loss(loss) if loss_scale else loss
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    losses.append(float(loss))
  return losses


def test_bfloat16_training_loss_tracks_float32(policy):
  reference = _train(_pretrainer(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                     optimization.create_optimizer(2e-3, 20, 2), steps=8)
  policy("mixed_bfloat16")
  mixed = _train(_pretrainer(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                 optimization.create_optimizer(2e-3, 20, 2), steps=8)
  # Eight steps at learning rate 2e-3 take float32's loss down by over 1
  # (from about ln(vocab) + ln 2): the comparison is of a model that learns.
  assert reference[-1] < reference[0] - 1.0
  # bfloat16 keeps 8 significant bits (relative rounding 2^-9, about 0.2%
  # per operation); through 8 training steps the losses stay within 3% of
  # float32's, while a wrong cast (e.g. a float16 overflow, or a layer norm
  # run in 16 bits) moves them by far more.
  np.testing.assert_allclose(mixed, reference, rtol=0.03)


def test_float16_training_with_loss_scaling_tracks_float32(policy):
  reference = _train(_pretrainer(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                     optimization.create_optimizer(2e-3, 20, 2), steps=8)
  policy("mixed_float16")
  model = _pretrainer(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  optimizer = keras.optimizers.LossScaleOptimizer(optimization.create_optimizer(2e-3, 20, 2))
  mixed = _train(model, optimizer, steps=8, loss_scale=True)
  assert reference[-1] < reference[0] - 1.0
  # float16 keeps 11 significant bits (relative rounding 2^-12); the float32
  # master weights and float32 losses keep eight steps within 0.2% of
  # float32's. A step the loss scale skipped (an overflow), or gradients left
  # scaled, would leave a loss several percent away.
  np.testing.assert_allclose(mixed, reference, rtol=2e-3)
  assert float(optimizer.dynamic_scale) > 1.0
