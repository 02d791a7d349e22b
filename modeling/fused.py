"""GELU and layer normalisation as single XLA kernels, with hand-written gradients.

Written as plain TensorFlow ops, the tanh-approximate GELU is about ten
element-wise passes over the [tokens, intermediate] activations forward and
twice that backward; layer normalisation is a handful more. On CPU each pass
streams the whole tensor through memory, so together they cost BERT-Base about
a tenth of a training step. Here each function and its gradient is one small
XLA computation (one fused loop), called from the ordinary TensorFlow graph:
the matrix multiplications stay with TensorFlow's oneDNN kernels, which are
faster on CPU than XLA's. The gradients recompute the cheap forward values
instead of keeping them, which also saves memory. The values are the
original's formulas; they differ from the unfused ops only by float rounding.
"""

import math

import tensorflow as tf

_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x):
  return tf.tanh(_GELU_C * (x + 0.044715 * x * x * x))


@tf.function(jit_compile=True, autograph=False)
def _gelu_forward(x):
  return 0.5 * x * (1.0 + _gelu_tanh(x))


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward(x, dy):
  t = _gelu_tanh(x)
  slope = _GELU_C * (1.0 + 3.0 * 0.044715 * x * x)
  return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * slope)


@tf.custom_gradient
def gelu(x):
  """x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), the original's GELU."""
  return _gelu_forward(x), lambda dy: _gelu_backward(x, dy)


def _moments(x):
  mean = tf.reduce_mean(x, -1, keepdims=True)
  variance = tf.reduce_mean(tf.math.squared_difference(x, mean), -1, keepdims=True)
  return mean, variance


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(x, gamma, beta, epsilon):
  mean, variance = _moments(x)
  # The order of tf.nn.batch_normalization, which the original used.
  scale = tf.math.rsqrt(variance + epsilon) * gamma
  return x * scale + (beta - mean * scale)


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(x, gamma, epsilon, dy):
  mean, variance = _moments(x)
  inv_std = tf.math.rsqrt(variance + epsilon)
  normalized = (x - mean) * inv_std
  d_normalized = dy * gamma
  dx = inv_std * (d_normalized
                  - tf.reduce_mean(d_normalized, -1, keepdims=True)
                  - normalized * tf.reduce_mean(d_normalized * normalized, -1, keepdims=True))
  outer_axes = list(range(len(x.shape) - 1))
  return dx, tf.reduce_sum(dy * normalized, outer_axes), tf.reduce_sum(dy, outer_axes)


def layer_norm(x, gamma, beta, epsilon):
  """Normalises the last axis of x, then scales by gamma and shifts by beta."""
  epsilon = tf.constant(epsilon, x.dtype)

  @tf.custom_gradient
  def normalize(x, gamma, beta):
    def grad(dy):
      return _layer_norm_backward(x, gamma, epsilon, dy)
    return _layer_norm_forward(x, gamma, beta, epsilon), grad

  return normalize(x, gamma, beta)
