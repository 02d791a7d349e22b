"""The fused GELU / layer norm / dropout kernels against plain float64 math."""

import math

import numpy as np
import tensorflow as tf

from modeling.blocks import fused, layers


def _float64_gradients(fn, *args):
  args = [tf.constant(a, tf.float64) for a in args]
  with tf.GradientTape() as tape:
    tape.watch(args)
    y = fn(*args)
  dy = tf.constant(np.random.RandomState(1).normal(size=y.shape), tf.float64)
  return y.numpy(), [g.numpy() for g in tape.gradient(y, args, output_gradients=dy)], dy


def _fused_gradients(fn, dy, *args):
  args = [tf.constant(a, tf.float32) for a in args]
  with tf.GradientTape() as tape:
    tape.watch(args)
    y = fn(*args)
  grads = tape.gradient(y, args, output_gradients=tf.cast(dy, tf.float32))
  return y.numpy(), [g.numpy() for g in grads]


def test_gelu_and_its_gradient_match_the_tanh_formula():
  def reference(x):  # the original's formula, differentiated by TensorFlow
    return x * 0.5 * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
  x = np.random.RandomState(0).normal(scale=3.0, size=(64, 96)).astype(np.float32)
  want, (want_dx,), dy = _float64_gradients(reference, x)
  got, (got_dx,) = _fused_gradients(fused.gelu, dy, x)
  np.testing.assert_allclose(got, want, atol=1e-5)
  np.testing.assert_allclose(got_dx, want_dx, atol=1e-5)


def test_exact_gelu_and_its_gradient_match_the_erf_formula():
  # Hugging Face's "gelu": x * Phi(x), written here from math.erf in float64.
  x = np.random.RandomState(0).normal(scale=3.0, size=(64, 96)).astype(np.float32)
  erf = np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2.0))
  want = 0.5 * x * (1.0 + erf)
  want_slope = 0.5 * (1.0 + erf) + x * np.exp(-0.5 * x.astype(np.float64) ** 2) / math.sqrt(
      2 * math.pi)
  dy = np.random.RandomState(1).normal(size=x.shape)
  got, (got_dx,) = _fused_gradients(fused.gelu_exact, dy, x)
  np.testing.assert_allclose(got, want, atol=1e-5)
  np.testing.assert_allclose(got_dx, dy * want_slope, atol=1e-5)
  with fused.plain_ops():  # What exports and inference run.
    np.testing.assert_allclose(fused.gelu_exact(tf.constant(x)).numpy(), want, atol=1e-5)
  assert layers.get_activation("gelu_exact") is fused.gelu_exact
  # The two forms differ by up to ~1e-3: a model must run the one it was trained with.
  assert np.abs(fused.gelu(tf.constant(x)).numpy() - want).max() > 1e-4


def test_layer_norm_and_its_gradients_match_batch_normalization():
  def reference(x, gamma, beta):  # what the original's layer norm computed
    mean, variance = tf.nn.moments(x, [-1], keepdims=True)
    return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12)
  rng = np.random.RandomState(0)
  x = rng.normal(loc=0.5, scale=2.0, size=(4, 16, 48)).astype(np.float32)
  gamma = rng.normal(1.0, 0.3, size=48).astype(np.float32)
  beta = rng.normal(0.0, 0.3, size=48).astype(np.float32)
  want, want_grads, dy = _float64_gradients(reference, x, gamma, beta)
  got, got_grads = _fused_gradients(
      lambda *a: fused.layer_norm(*a, epsilon=1e-12), dy, x, gamma, beta)
  np.testing.assert_allclose(got, want, atol=1e-5)
  for g, w in zip(got_grads, want_grads):
    np.testing.assert_allclose(g, w, atol=1e-4 * max(1.0, np.abs(w).max()))


def test_dropout_rate_scale_and_gradient_mask():
  for rate, shape in ((0.1, (8, 12, 128, 128)), (0.5, (1001, 77)), (0.02, (3, 5, 7))):
    dropout = layers.Dropout(rate, seed=3)
    x = tf.ones(shape)
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = dropout(x, training=True)
    grad = tape.gradient(y, x).numpy()
    y = y.numpy()
    kept = y != 0
    # Kept elements are scaled by exactly 1 / (1 - rate); the gradient flows
    # through the same elements with the same scale.
    np.testing.assert_array_equal(y[kept], np.float32(1.0 / (1.0 - rate)))
    np.testing.assert_array_equal(grad, y)
    if y.size > 10000:
      sigma = math.sqrt(rate * (1 - rate) / y.size)
      assert abs((~kept).mean() - rate) < 5 * sigma + 2.0 ** -16
      # Every call draws a new mask.
      assert not np.array_equal(dropout(x, training=True).numpy() != 0, kept)
    np.testing.assert_array_equal(dropout(x, training=False).numpy(), x.numpy())


def test_dropout_masks_follow_the_seed():
  x = tf.ones((64, 64))
  a = [layers.Dropout(0.3, seed=7)(x, training=True).numpy() for _ in range(2)]
  np.testing.assert_array_equal(a[0], a[1])
  b = layers.Dropout(0.3, seed=8)(x, training=True).numpy()
  assert not np.array_equal(a[0], b)


def test_attention_softmax_and_its_gradient():
  rng = np.random.RandomState(0)
  scores = rng.normal(scale=4.0, size=(2, 3, 5, 7)).astype(np.float32)
  mask = np.ones((2, 7), np.float32)
  mask[1, 4:] = 0
  adder = layers.attention_mask_adder(mask).numpy()
  scale = 1 / math.sqrt(8.0)
  reference = lambda s: tf.nn.softmax(s * scale + tf.cast(adder, tf.float64))
  want, (want_ds,), dy = _float64_gradients(reference, scores)
  got, (got_ds,) = _fused_gradients(lambda s: fused.attention_softmax(s, adder, scale), dy, scores)
  np.testing.assert_allclose(got, want, atol=1e-6)
  np.testing.assert_allclose(got_ds, want_ds, atol=1e-5)
  assert np.all(got[1, :, :, 4:] < 1e-4)  # masked keys get (almost) no weight


def test_kernels_keep_a_16_bit_input_dtype_and_compute_in_float32():
  x = tf.constant(np.random.RandomState(0).normal(size=(4, 32)), tf.bfloat16)
  gamma, beta = tf.ones([32]), tf.zeros([32])
  y = fused.layer_norm(x, gamma, beta, 1e-12)
  assert y.dtype == tf.bfloat16
  want = fused.layer_norm(tf.cast(x, tf.float32), gamma, beta, 1e-12)
  np.testing.assert_allclose(tf.cast(y, tf.float32).numpy(), want.numpy(), atol=2e-2)
  probs = fused.attention_softmax(x[None, None], tf.zeros([1, 1, 1, 32]), 1.0)
  assert probs.dtype == tf.bfloat16
