"""The original's optimizer and learning-rate schedule, plus LAMB.

`create_optimizer(init_lr, num_train_steps, num_warmup_steps)` gives what the
original's `optimization.create_optimizer` trained with:
  * learning rate: linear warm-up from 0 over `num_warmup_steps`, otherwise
    polynomial (power 1) decay from `init_lr` to 0 at `num_train_steps`; the
    update made at step t (from 0) uses the rate at t, so the first update has
    rate 0 and the rate jumps to the decayed value when warm-up ends;
  * Adam without bias correction, epsilon 1e-6, betas 0.9/0.999;
  * decoupled weight decay 0.01 added to the update, except for variables
    whose names contain "LayerNorm", "layer_norm" or "bias";
  * gradients clipped to global norm 1.0.
"""

import re

import keras
import tensorflow as tf

EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
  """Linear warm-up, then linear decay to zero (the original's schedule).

  The original's decay counts from step 0, so the rate drops to
  `init_lr * (1 - warmup / train_steps)` when warm-up ends.
  `decay_after_warmup=True` starts the decay at `init_lr` when warm-up ends
  instead, as Hugging Face's linear schedule does.
  """

  def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, power=1.0,
               end_learning_rate=0.0, decay_after_warmup=False):
    self.init_lr = init_lr
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.power = power
    self.end_learning_rate = end_learning_rate
    self.decay_after_warmup = decay_after_warmup

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    start = float(self.num_warmup_steps) if self.decay_after_warmup else 0.0
    decay_steps = float(max(self.num_train_steps - start, 1))
    progress = tf.clip_by_value(step - start, 0.0, decay_steps) / decay_steps
    decayed = ((self.init_lr - self.end_learning_rate) *
               tf.pow(1.0 - progress, self.power) + self.end_learning_rate)
    if not self.num_warmup_steps:
      return decayed
    warmup = self.init_lr * step / float(self.num_warmup_steps)
    return tf.where(step < float(self.num_warmup_steps), warmup, decayed)

  def get_config(self):
    return {"init_lr": self.init_lr, "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps, "power": self.power,
            "end_learning_rate": self.end_learning_rate,
            "decay_after_warmup": self.decay_after_warmup}


class _DecoupledDecayOptimizer(keras.optimizers.Optimizer):
  """Shared parts: first/second moments and name-based weight-decay exclusion.

  Variable names are matched with `re.search`, like the original; pass
  `variable_names` ({id(variable): name}) to match on original checkpoint
  names, otherwise the Keras variable path is used (our layer and weight names
  keep the original's "LayerNorm" and "bias" words, so both agree).
  `clip_dense_norm=True` clips by the norm of the summed gradients, as
  PyTorch's clip_grad_norm_, rather than the original's (see `apply`).
  """

  def __init__(self, learning_rate, weight_decay_rate=0.01, beta_1=0.9,
               beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
               variable_names=None, bias_correction=False, clip_dense_norm=False,
               name=None, **kwargs):
    super().__init__(learning_rate=learning_rate, name=name or type(self).__name__,
                     **kwargs)
    self.weight_decay_rate = weight_decay_rate
    self.bias_correction = bias_correction
    self.clip_dense_norm = clip_dense_norm
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_from_weight_decay = list(exclude_from_weight_decay or [])
    self._variable_names = dict(variable_names or {})

  _grads_reduced = False
  _slice_squares = None  # Per variable path, while apply() runs.
  _clip_variables = None

  def apply(self, grads, trainable_variables=None):
    # An embedding table used only through a lookup gets an IndexedSlices
    # gradient: one slice per looked-up position, a row looked up k times
    # having k slices. The original's tf.clip_by_global_norm counted such a
    # gradient by its slices (the sum of their squares, not the square of
    # their sum), which changes the clipping of every fine-tuning step; the
    # update itself uses the summed (dense) gradient. Both are kept here.
    # (Where the table also feeds the masked-LM output, as in pre-training,
    # the gradient is dense and the two agree.)
    variables = list(trainable_variables if trainable_variables is not None
                     else self._trainable_variables)
    # A variable no head reads (the pooler, beside a tagger's or an
    # embedder's head) has no gradient: left out, as Keras leaves it, before
    # the gradients are summed across replicas (which takes no None).
    kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
    grads, variables = [g for g, _ in kept], [v for _, v in kept]
    squares = {}
    for i, g in enumerate(grads):
      if isinstance(g, tf.IndexedSlices):
        if not self.clip_dense_norm:
          squares[variables[i].path] = tf.reduce_sum(tf.square(tf.cast(g.values, tf.float32)))
        grads[i] = tf.convert_to_tensor(g)
    context = tf.distribute.get_replica_context()
    multi_replica = context is not None and context.num_replicas_in_sync > 1
    if multi_replica:
      # Across replicas, Keras would clip each replica's partial gradient and
      # sum afterwards; clip the summed (global) gradient instead, as one
      # device with the whole batch would (whose slices are all replicas').
      grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
      if squares:
        keys = sorted(squares)
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [squares[k] for k in keys])
        squares = dict(zip(keys, summed))
    self._grads_reduced = multi_replica
    self._slice_squares = squares
    try:
      return super().apply(grads, variables)
    finally:
      self._grads_reduced = False
      self._slice_squares = None

  def _backend_apply_gradients(self, grads, trainable_variables):
    self._clip_variables = list(trainable_variables)
    try:
      return super()._backend_apply_gradients(grads, trainable_variables)
    finally:
      self._clip_variables = None

  def _squared_norms(self, grads, variables):
    """Each gradient's contribution to the global norm, as the original's."""
    squares = self._slice_squares or {}
    return [squares.get(v.path) if v.path in squares
            else tf.reduce_sum(tf.square(tf.cast(g, tf.float32)))
            for g, v in zip(grads, variables)]

  def _clip_gradients(self, grads):
    if not self.global_clipnorm or self._clip_variables is None:
      return super()._clip_gradients(grads)
    scale = clip_scale(self._squared_norms(grads, self._clip_variables),
                       float(self.global_clipnorm))
    return [g * tf.cast(scale, g.dtype) for g in grads]

  def _all_reduce_sum_gradients(self, grads_and_vars):
    if self._grads_reduced:
      return list(grads_and_vars)
    return super()._all_reduce_sum_gradients(grads_and_vars)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    self._m = [self.add_variable_from_reference(v, "m") for v in var_list]
    self._v = [self.add_variable_from_reference(v, "v") for v in var_list]
    # Decided once per variable, by name, at build time.
    self._decays = [self._decays_by_name(v) for v in var_list]

  def _decays_by_name(self, variable):
    if not self.weight_decay_rate:
      return False
    name = self._variable_names.get(id(variable), variable.path)
    return not any(re.search(p, name) for p in self.exclude_from_weight_decay)

  def _do_use_weight_decay(self, variable):
    return self._decays[self._get_variable_index(variable)]

  def _moments(self, gradient, variable):
    index = self._get_variable_index(variable)
    m, v = self._m[index], self._v[index]
    self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
    self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient))
    return m, v

  def get_config(self):
    config = super().get_config()
    config.update(weight_decay_rate=self.weight_decay_rate, beta_1=self.beta_1,
                  beta_2=self.beta_2, epsilon=self.epsilon,
                  exclude_from_weight_decay=self.exclude_from_weight_decay,
                  bias_correction=self.bias_correction, clip_dense_norm=self.clip_dense_norm)
    return config


class AdamWeightDecay(_DecoupledDecayOptimizer):
  """The original's AdamWeightDecayOptimizer (no bias correction).

  `bias_correction=True` (not the original's) divides the moments by
  1 - beta^t as Adam's paper and PyTorch's AdamW do:
  var -= lr * (m_hat / (sqrt(v_hat) + epsilon) + rate * var). Without it the
  first updates are about 3x larger (sqrt(1 - beta_2) / (1 - beta_1)).

  On one device, clipping and the update of every variable run as one XLA
  computation (`_clip_and_update`): each variable's gradient, moments and
  value are read and written once rather than once per element-wise op.
  Under a multi-replica strategy, `update_step` updates variable by variable.
  """

  def _fused(self):
    strategy = tf.distribute.get_strategy()
    return (not self._grads_reduced and strategy.num_replicas_in_sync == 1 and
            not isinstance(strategy, tf.distribute.TPUStrategy))

  def _clip_gradients(self, grads):
    # The fused update clips inside its single pass.
    return grads if self._fused() else super()._clip_gradients(grads)

  def _backend_apply_gradients(self, grads, trainable_variables):
    if self._fused():  # The slice norms go in with the gradients.
      squares = self._slice_squares or {}
      self._fused_squares = [squares.get(v.path) for v in trainable_variables]
    return super()._backend_apply_gradients(grads, trainable_variables)

  def _backend_update_step(self, grads, trainable_variables, learning_rate):
    if not self._fused():
      return super()._backend_update_step(grads, trainable_variables, learning_rate)
    if not hasattr(self, "_fused_update"):
      self._fused_update = tf.function(self._clip_and_update, jit_compile=True,
                                       autograph=False)
    indices = [self._get_variable_index(v) for v in trainable_variables]
    squares = getattr(self, "_fused_squares", None) or [None] * len(indices)
    slice_squares = [s for s in squares if s is not None]
    is_slice = [s is not None for s in squares]
    self._fused_update(list(grads), tf.cast(learning_rate, tf.float32), indices,
                       slice_squares, is_slice)

  def _clip_and_update(self, grads, learning_rate, indices, slice_squares, is_slice):
    grads = [tf.cast(g, tf.float32) for g in grads]
    if self.global_clipnorm:
      given = iter(slice_squares)
      squares = [next(given) if sliced else tf.reduce_sum(tf.square(g))
                 for g, sliced in zip(grads, is_slice)]
      scale = clip_scale(squares, float(self.global_clipnorm))
      grads = [g * scale for g in grads]
    for gradient, index in zip(grads, indices):
      variable = self._trainable_variables[index]
      m, v = self._m[index], self._v[index]
      next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
      next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient)
      update = self._adam_update(next_m, next_v)
      if self._decays[index]:
        update += self.weight_decay_rate * variable
      m.assign(next_m)
      v.assign(next_v)
      variable.assign(variable - learning_rate * update)

  def _adam_update(self, m, v):
    if not self.bias_correction:
      return m / (tf.sqrt(v) + self.epsilon)
    step = tf.cast(self.iterations + 1, m.dtype)
    m_hat = m / (1.0 - tf.pow(tf.cast(self.beta_1, m.dtype), step))
    v_hat = v / (1.0 - tf.pow(tf.cast(self.beta_2, m.dtype), step))
    return m_hat / (tf.sqrt(v_hat) + self.epsilon)

  def update_step(self, gradient, variable, learning_rate):
    if self.bias_correction:
      gradient = tf.cast(gradient, variable.dtype)
      update = self._adam_update(*self._moments(gradient, variable))
      if self._do_use_weight_decay(variable):
        update += self.weight_decay_rate * variable
      self.assign_sub(variable, tf.cast(learning_rate, variable.dtype) * update)
      return
    # Two fused kernels instead of a dozen element-wise passes: decay with the
    # old value first (var -= lr * rate * var), then TensorFlow's Adam kernel,
    # which with beta powers of 0 applies no bias correction:
    # m, v updated; var -= lr * m / (sqrt(v) + epsilon). Together that is the
    # original's var -= lr * (m / (sqrt(v) + epsilon) + rate * var).
    index = self._get_variable_index(variable)
    lr = tf.cast(learning_rate, variable.dtype)
    if self._decays[index]:
      tf.raw_ops.ResourceApplyGradientDescent(
          var=variable.handle, alpha=lr * self.weight_decay_rate, delta=variable)
    zero = tf.zeros([], variable.dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle, m=self._m[index].handle, v=self._v[index].handle,
        beta1_power=zero, beta2_power=zero, lr=lr,
        beta1=tf.cast(self.beta_1, variable.dtype),
        beta2=tf.cast(self.beta_2, variable.dtype),
        epsilon=tf.cast(self.epsilon, variable.dtype),
        grad=tf.cast(gradient, variable.dtype))


class Lamb(_DecoupledDecayOptimizer):
  """LAMB (You et al., 2019) for large batches: Adam with bias correction and a
  per-variable trust ratio ||w|| / ||update||; same decay exclusions."""

  def update_step(self, gradient, variable, learning_rate):
    gradient = tf.cast(gradient, variable.dtype)
    m, v = self._moments(gradient, variable)
    step = tf.cast(self.iterations + 1, variable.dtype)
    m_hat = m / (1.0 - tf.pow(self.beta_1, step))
    v_hat = v / (1.0 - tf.pow(self.beta_2, step))
    update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
    if self._do_use_weight_decay(variable):
      update += self.weight_decay_rate * variable
    w_norm = tf.norm(variable)
    u_norm = tf.norm(update)
    ratio = tf.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
    self.assign_sub(variable, tf.cast(learning_rate, variable.dtype) * ratio * update)


def clip_scale(squared_norms, clip_norm):
  """The factor tf.clip_by_global_norm scales gradients by, given each one's
  squared norm: clip / max(norm, clip), NaN if the norm is not finite."""
  norm = tf.sqrt(tf.add_n(squared_norms))
  return clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm) + (norm - norm)


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                     variable_names=None, weight_decay_rate=0.01, adam_bias_correction=False,
                     adam_epsilon=1e-6, decay_after_warmup=False, clip_dense_norm=False):
  """The original's training optimizer (or LAMB), with global-norm clipping 1.0.
  `adam_bias_correction` applies to adamw (LAMB always corrects); the other
  arguments' defaults are the original's."""
  schedule = WarmupPolynomialDecay(init_lr, num_train_steps, num_warmup_steps,
                                   decay_after_warmup=decay_after_warmup)
  extra = {"bias_correction": adam_bias_correction} if optimizer == "adamw" else {}
  cls = {"adamw": AdamWeightDecay, "lamb": Lamb}[optimizer]
  return cls(learning_rate=schedule, global_clipnorm=1.0, variable_names=variable_names,
             weight_decay_rate=weight_decay_rate, epsilon=adam_epsilon,
             clip_dense_norm=clip_dense_norm, **extra)
