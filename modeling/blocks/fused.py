"""GELU (both forms), layer normalisation, the attention softmax and dropout
as single XLA kernels, with hand-written gradients.

Written as plain TensorFlow ops, the tanh-approximate GELU is about ten
element-wise passes over the [tokens, intermediate] activations forward and
twice that backward; layer normalisation is a handful more. On CPU each pass
streams the whole tensor through memory, a noticeable share of a training
step. Here each function and its gradient is one small
XLA computation (one fused loop), called from the ordinary TensorFlow graph:
the matrix multiplications stay with TensorFlow's oneDNN kernels, which are
faster on CPU than XLA's. The gradients recompute the cheap forward values
instead of keeping them, which also saves memory. The values are the
original's formulas; they differ from the unfused ops only by float rounding.
They serve training only: without a backward pass the plain ops are as fast,
and XLA compiles a kernel again for every new input shape, which batches cut
to their longest row bring (BertModel runs plain ops when not training).
"""

import contextlib
import math
import threading

import tensorflow as tf

_GELU_C = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

_state = threading.local()


@contextlib.contextmanager
def plain_ops():
  """Within this block, functions traced use the same formulas as plain
  TensorFlow ops, with no XLA kernel.

  For exports: stock TF Serving runs XLA-compiled functions only behind an
  experimental flag, so a SavedModel must not contain them.
  """
  previous = getattr(_state, "plain", False)
  _state.plain = True
  try:
    yield
  finally:
    _state.plain = previous


def _use_plain_ops():
  return getattr(_state, "plain", False)


@contextlib.contextmanager
def serving():
  """plain_ops() for a SavedModel's functions, which also need no gradients:
  nothing traced here keeps a gradient function (a SavedModel stores each
  custom gradient's function, which serving never runs and loading warns
  about), and layers may read weights prepared for serving."""
  previous = getattr(_state, "serving", False)
  _state.serving = True
  try:
    with plain_ops():
      yield
  finally:
    _state.serving = previous


def for_serving():
  """Whether functions traced now are a SavedModel's (see serving())."""
  return getattr(_state, "serving", False)


class _xla_kernel(object):  # pylint: disable=invalid-name  (a decorator)
  """A function compiled by XLA, traced apart for fully known and for partly
  unknown input shapes. A trace made for unknown shapes (inside a training
  loop over batches of any length) would otherwise also serve later calls
  with known shapes, and its compiled code can round differently in the last
  bits: results would depend on what ran before."""

  def __init__(self, function):
    self.python_function = function
    self._known = tf.function(function, jit_compile=True, autograph=False)
    self._unknown = tf.function(function, jit_compile=True, autograph=False)

  def __call__(self, *args):
    known = all(a.shape.is_fully_defined() for a in args if hasattr(a, "shape"))
    return (self._known if known else self._unknown)(*args)


def _gelu_tanh(x):
  return tf.tanh(_GELU_C * (x + 0.044715 * x * x * x))


# The kernels compute in float32 whatever their input dtype (XLA's CPU code for
# 16-bit element-wise math is several times slower) and return the input's.


@_xla_kernel
def _gelu_forward(x):
  x32 = tf.cast(x, tf.float32)
  return tf.cast(0.5 * x32 * (1.0 + _gelu_tanh(x32)), x.dtype)


@_xla_kernel
def _gelu_backward(x, dy):
  x32 = tf.cast(x, tf.float32)
  t = _gelu_tanh(x32)
  slope = _GELU_C * (1.0 + 3.0 * 0.044715 * x32 * x32)
  d = tf.cast(dy, tf.float32) * (0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * slope)
  return tf.cast(d, x.dtype)


@_xla_kernel
def _gelu_exact_forward(x):
  x32 = tf.cast(x, tf.float32)
  return tf.cast(0.5 * x32 * (1.0 + tf.math.erf(x32 * _SQRT_HALF)), x.dtype)


@_xla_kernel
def _gelu_exact_backward(x, dy):
  x32 = tf.cast(x, tf.float32)
  cdf = 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF))
  density = tf.exp(-0.5 * x32 * x32) * _INV_SQRT_2PI
  return tf.cast(tf.cast(dy, tf.float32) * (cdf + x32 * density), x.dtype)


def _with_kernels(forward, backward):
  @tf.custom_gradient
  def apply(x):
    return forward(x), lambda dy: backward(x, dy)
  return apply


_fused_gelu = _with_kernels(_gelu_forward, _gelu_backward)
_fused_gelu_exact = _with_kernels(_gelu_exact_forward, _gelu_exact_backward)


def gelu(x):
  """x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), the original's GELU.

  The plain path is TensorFlow's own tanh-approximate GELU, the same formula,
  whose ops TensorFlow's graph optimizer fuses with the matrix product before
  it (one oneDNN kernel on CPU).
  """
  if _use_plain_ops():
    return tf.nn.gelu(x, approximate=True)
  return _fused_gelu(x)


def gelu_exact(x):
  """x * 0.5 * (1 + erf(x / sqrt(2))): GELU without the approximation, as
  Hugging Face's "gelu" (PyTorch's default) computes it. The plain path is
  TensorFlow's own exact GELU, the same formula."""
  if _use_plain_ops():
    return tf.nn.gelu(x, approximate=False)
  return _fused_gelu_exact(x)


def _moments(x):
  mean = tf.reduce_mean(x, -1, keepdims=True)
  variance = tf.reduce_mean(tf.math.squared_difference(x, mean), -1, keepdims=True)
  return mean, variance


@_xla_kernel
def _layer_norm_forward(x, gamma, beta, epsilon):
  x32 = tf.cast(x, tf.float32)
  mean, variance = _moments(x32)
  # The order of tf.nn.batch_normalization, which the original used.
  scale = tf.math.rsqrt(variance + epsilon) * gamma
  return tf.cast(x32 * scale + (beta - mean * scale), x.dtype)


@_xla_kernel
def _layer_norm_backward(x, gamma, epsilon, dy):
  x32 = tf.cast(x, tf.float32)
  dy = tf.cast(dy, tf.float32)
  mean, variance = _moments(x32)
  inv_std = tf.math.rsqrt(variance + epsilon)
  normalized = (x32 - mean) * inv_std
  d_normalized = dy * gamma
  dx = inv_std * (d_normalized
                  - tf.reduce_mean(d_normalized, -1, keepdims=True)
                  - normalized * tf.reduce_mean(d_normalized * normalized, -1, keepdims=True))
  outer_axes = list(range(len(x.shape) - 1))
  return (tf.cast(dx, x.dtype), tf.reduce_sum(dy * normalized, outer_axes),
          tf.reduce_sum(dy, outer_axes))


def layer_norm(x, gamma, beta, epsilon):
  """Normalises the last axis of x, then scales by float32 gamma and shifts by
  beta. Computes in float32 whatever x's dtype, and returns x's dtype."""
  epsilon = tf.constant(epsilon, tf.float32)
  if _use_plain_ops():
    return _layer_norm_forward.python_function(x, gamma, beta, epsilon)

  @tf.custom_gradient
  def normalize(x, gamma, beta):
    def grad(dy):
      return _layer_norm_backward(x, gamma, epsilon, dy)
    return _layer_norm_forward(x, gamma, beta, epsilon), grad

  return normalize(x, gamma, beta)


def _masked_softmax(scores, mask_adder, scale):
  return tf.nn.softmax(tf.cast(scores, tf.float32) * scale + mask_adder)


@_xla_kernel
def _attention_softmax_forward(scores, mask_adder, scale):
  return tf.cast(_masked_softmax(scores, mask_adder, scale), scores.dtype)


@_xla_kernel
def _attention_softmax_backward(scores, mask_adder, scale, dy):
  # The probabilities are recomputed in float32 from the scores.
  probs = _masked_softmax(scores, mask_adder, scale)
  dy = tf.cast(dy, tf.float32)
  d_logits = probs * (dy - tf.reduce_sum(dy * probs, -1, keepdims=True))
  return tf.cast(d_logits * scale, scores.dtype)


def attention_softmax(scores, mask_adder, scale):
  """softmax(scores * scale + mask_adder) over the last axis, in float32;
  returns scores' dtype. `mask_adder` (float32) gets no gradient."""
  scale = tf.constant(scale, tf.float32)
  mask_adder = tf.cast(mask_adder, tf.float32)
  if _use_plain_ops():
    return _attention_softmax_forward.python_function(scores, mask_adder, scale)

  @tf.custom_gradient
  def softmax(scores):
    def grad(dy):
      return _attention_softmax_backward(scores, mask_adder, scale, dy)
    return _attention_softmax_forward(scores, mask_adder, scale), grad

  return softmax(scores)


@_xla_kernel
def _keep_and_scale(x, keep, scale):
  return tf.where(keep, tf.cast(tf.cast(x, tf.float32) * scale, x.dtype), tf.zeros_like(x))


# Dropout decisions are made on 16 random bits each: one 32-bit draw of
# TensorFlow's Philox generator serves two elements, half the random-number
# work of a float per element, which was most of dropout's cost. The
# probability of dropping is round(rate * 2^16) / 2^16 (0.1 becomes
# 0.1000061).
_DROPOUT_RESOLUTION = 1 << 16


def dropout_threshold(rate):
  """Elements whose 16 random bits, read as a signed int16, are below this
  are dropped."""
  threshold = int(round(rate * _DROPOUT_RESOLUTION)) - _DROPOUT_RESOLUTION // 2
  return min(threshold, _DROPOUT_RESOLUTION // 2 - 1)


def dropout(x, rate, seed):
  """Inverted dropout: zeroes each element with probability `rate` (to 2^-16)
  and scales the rest by 1 / (1 - rate). `seed`: a [2] int32 tensor."""
  count = x.shape.num_elements()
  if count is None:
    count = tf.size(x)
  # Philox named explicitly: what TensorFlow picks on CPU and GPU anyway, and
  # under XLA (use_xla) much faster than its default choice there.
  words = tf.random.stateless_uniform([(count + 1) // 2], seed, minval=None, maxval=None,
                                      dtype=tf.uint32, alg="philox")
  halves = tf.reshape(tf.bitcast(words, tf.int16), [-1])
  if not isinstance(count, int) or count % 2:
    halves = halves[:count]
  keep = tf.reshape(halves >= dropout_threshold(rate), tf.shape(x))
  scale = tf.constant(1.0 / (1.0 - rate), tf.float32)
  if _use_plain_ops():
    return _keep_and_scale.python_function(x, keep, scale)

  @tf.custom_gradient
  def apply(x):
    return _keep_and_scale(x, keep, scale), lambda dy: _keep_and_scale(dy, keep, scale)

  return apply(x)
