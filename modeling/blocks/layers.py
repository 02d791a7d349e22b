"""The building blocks of BERT, computing exactly what the original graph did.

Every weight is created at construction with the shape the released
checkpoints use (kernels are [in, out]), under the name the original gave it,
so that `modeling.checkpoints` can map names one to one. Layer norms and
softmaxes run in float32 whatever the dtype policy, as mixed-precision
training needs.
"""

import math

import keras
import tensorflow as tf

from modeling.blocks import deferred_init
from modeling.blocks import fused

# GELU with the tanh approximation, as the original used (one fused kernel).
gelu = fused.gelu
_ACTIVATIONS = {"gelu": gelu, "gelu_exact": fused.gelu_exact, "relu": tf.nn.relu,
                "tanh": tf.tanh}


def get_activation(name):
  """Maps the config's `hidden_act` to a function (None means linear)."""
  if not isinstance(name, str):
    return name
  if not name or name.lower() == "linear":
    return None
  if name.lower() in _ACTIVATIONS:
    return _ACTIVATIONS[name.lower()]
  raise ValueError("Unsupported activation: %s" % name)


def _values_per_word(dtype, head_size, training):
  """Attention heads are rearranged (transposed) on their values' bits
  outside training: this many values move as one float64 word (0: move
  them as they are).

  With oneDNN on, TensorFlow transposes float32 and bfloat16 tensors with a
  oneDNN reorder whose fixed cost dominates at the sizes a request or an
  evaluation batch brings, where TensorFlow's own transpose is faster
  (docs/performance.md). Read as float64 (two float32 or four
  bfloat16 values each), the same bytes go through TensorFlow's own
  transpose, which moves them unchanged, and as a float type without the
  one-time oneDNN error line an integer type prints. Gradients (taken
  without dropout, say) move back the same way. Training keeps tf.transpose,
  as do TPUs, which have no float64.
  """
  per_word = 8 // dtype.size if dtype.size in (2, 4) else 0
  if (training or not per_word or head_size is None or head_size % per_word or
      isinstance(tf.distribute.get_strategy(), tf.distribute.TPUStrategy)):
    return 0
  return per_word


def transpose_words(x, perm):
  """x [a, b, c, d, values_per_word] with its first four axes transposed by
  `perm`, each word's values moved together as one float64 (see
  _values_per_word); the gradient moves back the same way."""
  inverse = [list(perm).index(axis) for axis in range(len(perm))]
  if fused.for_serving():  # No gradient to keep (fused.serving).
    return tf.bitcast(tf.transpose(tf.bitcast(x, tf.float64), perm), x.dtype)

  @tf.custom_gradient
  def move(x):
    moved = tf.bitcast(tf.transpose(tf.bitcast(x, tf.float64), perm), x.dtype)
    return moved, lambda dy: transpose_words(dy, inverse)
  return move(x)


def truncated_normal(stddev):
  """The original's initializer: normal truncated at two standard deviations."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


# How new weights may be drawn, by name: the original's, or Hugging Face's
# (its _init_weights draws dense weights from the whole normal).
INITIALIZERS = {"truncated_normal": truncated_normal,
                "normal": lambda stddev: keras.initializers.RandomNormal(stddev=stddev)}


class Layer(keras.layers.Layer):
  """Every layer here makes its weights and sublayers in __init__: there is
  nothing to build. Saying so spares Keras's build by symbolic tracing,
  which it runs on the first call of a layer whose sublayers have not run
  yet: every trace of the model traced each transformer layer twice and
  its attention three times (a third of a BERT-Base trace)."""

  def build(self, input_shape=None):
    self.built = True

  def add_weight(self, *args, initializer=None, **kwargs):
    deferral = deferred_init.active()
    if deferral is None or isinstance(initializer, str):  # "zeros", "ones": cheap.
      return super().add_weight(*args, initializer=initializer, **kwargs)
    variable = super().add_weight(*args, initializer="zeros", **kwargs)
    deferral.pending.append((variable, initializer))
    return variable


class Dropout(Layer):
  """Dropout while training (see fused.dropout); its random state is a Keras
  SeedGenerator, which the training loop checkpoints."""

  def __init__(self, rate, seed=None, **kwargs):
    super().__init__(**kwargs)
    self.rate = float(rate)
    self.seed_generator = keras.random.SeedGenerator(seed)

  def call(self, x, training=False):
    if not training or not self.rate:
      return x
    seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
    return fused.dropout(x, self.rate, seed)


class Dense(Layer):
  """x @ kernel + bias on the last axis, with an optional activation."""

  def __init__(self, input_size, units, activation=None, initializer_range=0.02,
               **kwargs):
    super().__init__(**kwargs)
    self.activation = get_activation(activation)
    self.kernel = self.add_weight(
        name="kernel", shape=(input_size, units),
        initializer=truncated_normal(initializer_range))
    self.bias = self.add_weight(name="bias", shape=(units,), initializer="zeros")

  def call(self, x):
    kernel = tf.cast(self.kernel, x.dtype)
    leading = None
    if x.shape.rank != 2:  # Work on [tokens, features], as the original did.
      leading = tf.shape(x)[:-1]
      x = tf.reshape(x, [-1, kernel.shape[0]])
    # MatMul, BiasAdd and the activation adjacent on a 2-D tensor: TensorFlow
    # fuses them into one kernel on CPU.
    y = tf.nn.bias_add(tf.matmul(x, kernel), tf.cast(self.bias, x.dtype))
    if self.activation is not None:
      y = self.activation(y)
    if leading is not None:
      y = tf.reshape(y, tf.concat([leading, [kernel.shape[1]]], 0))
    return y


class LayerNorm(Layer):
  """Layer normalisation over the last axis, epsilon 1e-12, always in float32.

  Its parameters are float32 whatever the dtype policy, and it normalises in
  float32 inside its kernel; it returns its input's dtype (so under mixed
  precision no separate casts are needed on either side).
  """

  def __init__(self, size, epsilon=1e-12, **kwargs):
    kwargs["dtype"] = "float32"
    super().__init__(**kwargs)
    self._convert_input_args = False  # Take bfloat16/float16 inputs as they are.
    self.epsilon = epsilon
    self.beta = self.add_weight(name="beta", shape=(size,), initializer="zeros")
    self.gamma = self.add_weight(name="gamma", shape=(size,), initializer="ones")

  def call(self, x):
    return fused.layer_norm(x, tf.convert_to_tensor(self.gamma),
                            tf.convert_to_tensor(self.beta), self.epsilon)


class Embeddings(Layer):
  """Word + token type + absolute position embeddings, then LayerNorm, dropout.

  Always float32, like LayerNorm: under mixed precision, looking rows up in
  the float32 tables beats casting whole tables to 16 bits every step.
  """

  def __init__(self, config, **kwargs):
    kwargs["dtype"] = "float32"
    super().__init__(**kwargs)
    self.config = config
    init = truncated_normal(config.initializer_range)
    self.word_embeddings = self.add_weight(
        name="word_embeddings", shape=(config.vocab_size, config.hidden_size),
        initializer=init)
    self.token_type_embeddings = self.add_weight(
        name="token_type_embeddings",
        shape=(config.type_vocab_size, config.hidden_size), initializer=init)
    self.position_embeddings = self.add_weight(
        name="position_embeddings",
        shape=(config.max_position_embeddings, config.hidden_size),
        initializer=init)
    self.layer_norm = LayerNorm(config.hidden_size, name="LayerNorm")
    self.dropout = Dropout(config.hidden_dropout_prob)

  def call(self, input_ids, segment_ids, training=False):
    seq_length = tf.shape(input_ids)[1]
    output = tf.gather(tf.convert_to_tensor(self.word_embeddings), input_ids)
    table = tf.convert_to_tensor(self.token_type_embeddings)
    if training:
      # Token types by a one-hot product, as the original: the table's
      # gradient is then dense, and the optimizer's clipping sees it as the
      # original's did (only the word embeddings have a per-lookup, sliced
      # gradient). Outside training a lookup gives the same values (a
      # product with one-hot rows adds exact zeros) in one small op.
      types = tf.one_hot(segment_ids, self.config.type_vocab_size, dtype=tf.float32)
      output += tf.einsum("bst,th->bsh", types, table)
    else:
      output += tf.gather(table, segment_ids)
    output += tf.convert_to_tensor(self.position_embeddings)[tf.newaxis, :seq_length, :]
    output = self.layer_norm(output)
    return self.dropout(output, training=training)


class SelfAttention(Layer):
  """Multi-head scaled dot-product self-attention with an additive mask."""

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    hidden = config.hidden_size
    self.num_heads = config.num_attention_heads
    self.head_size = hidden // self.num_heads
    r = config.initializer_range
    self.query = Dense(hidden, hidden, initializer_range=r, name="query")
    self.key = Dense(hidden, hidden, initializer_range=r, name="key")
    self.value = Dense(hidden, hidden, initializer_range=r, name="value")
    self.dropout = Dropout(config.attention_probs_dropout_prob)
    # Set by prepare_for_serving; not tracked, so no checkpoint holds it.
    object.__setattr__(self, "_projections", None)

  def prepare_for_serving(self):
    """Makes the query, key and value projections one [hidden, 3 * hidden]
    product for exports (functions traced in fused.serving()): fewer, larger
    products per request. Returns (the variables an export then no longer
    reads, the new ones it reads instead)."""
    parts = (self.query, self.key, self.value)
    kernel = tf.Variable(tf.concat([tf.convert_to_tensor(d.kernel) for d in parts], 1),
                         trainable=False, name=self.name + "_qkv_kernel")
    bias = tf.Variable(tf.concat([tf.convert_to_tensor(d.bias) for d in parts], 0),
                       trainable=False, name=self.name + "_qkv_bias")
    object.__setattr__(self, "_projections", (kernel, bias))
    replaced = [getattr(v, "value", v) for d in parts for v in (d.kernel, d.bias)]
    return replaced, [kernel, bias]

  def _projected_heads(self, rows, batch, length, training):
    """q, k and v, each [batch, heads, length, head_size], from the prepared
    product (prepare_for_serving) and one transpose."""
    kernel, bias = self._projections
    y = tf.nn.bias_add(tf.matmul(rows, tf.cast(kernel, rows.dtype)),
                       tf.cast(bias, rows.dtype))
    per_word = _values_per_word(y.dtype, self.head_size, training)
    if per_word:
      words = tf.reshape(y, [batch, length, 3, self.num_heads, self.head_size // per_word,
                             per_word])
      qkv = transpose_words(words, [2, 0, 3, 1, 4])
    else:
      qkv = tf.transpose(tf.reshape(y, [batch, length, 3, self.num_heads, self.head_size]),
                         [2, 0, 3, 1, 4])
    return tf.unstack(tf.reshape(qkv, [3, batch, self.num_heads, length, self.head_size]))

  def _heads(self, y, batch, length, training):
    """Dense outputs [batch * length, hidden] as [batch, heads, length,
    head_size]: one reshape there and one transpose (of float64 words
    outside training, see _values_per_word)."""
    per_word = _values_per_word(y.dtype, self.head_size, training)
    if not per_word:
      return tf.transpose(tf.reshape(y, [batch, length, self.num_heads, self.head_size]),
                          [0, 2, 1, 3])
    words = tf.reshape(y, [batch, length, self.num_heads, self.head_size // per_word,
                           per_word])
    return tf.reshape(transpose_words(words, [0, 2, 1, 3]),
                      [batch, self.num_heads, length, self.head_size])

  def _rows(self, context, batch, length, training):
    """[batch, heads, length, head_size] -> [batch * length, hidden]."""
    per_word = _values_per_word(context.dtype, self.head_size, training)
    if per_word:
      words = tf.reshape(context, [batch, self.num_heads, length,
                                   self.head_size // per_word, per_word])
      context = transpose_words(words, [0, 2, 1, 3])
    else:
      context = tf.transpose(context, [0, 2, 1, 3])
    return tf.reshape(context, [-1, self.num_heads * self.head_size])

  def call(self, x, mask_adder, training=False, queries=None, packing=None,
           query_positions=None):
    """Attends from `queries` (default: x itself) to every position of x;
    returns [batch * queries, hidden] rows, as the original's attention did.
    Each shape is read once: the layer's reshapes are then no more than its
    products and transposes need.

    With `packing` (packed_tokens.PackedTokens), x is the batch's real tokens as rows
    [rows, hidden] and `queries` (if any) rows too, [batch * k, hidden];
    the projections run on those rows only, the attention itself on the
    padded batch. Without queries the result is again packed rows.

    In an export's functions (fused.serving()) after prepare_for_serving,
    q, k and v come from one product; queries are then given by
    `query_positions` ([batch, k] positions of x), as TransformerLayer does."""
    hidden = x.shape[-1]
    if packing is None and self._projections is not None and fused.for_serving():
      batch, length = tf.unstack(tf.shape(x)[:2])
      q, k, v = self._projected_heads(tf.reshape(x, [-1, hidden]), batch, length, training)
      if queries is None:
        return self._attend(q, k, v, mask_adder, batch, length, training)
      q = tf.gather(q, query_positions, axis=2, batch_dims=1)
      return self._attend(q, k, v, mask_adder, batch, tf.shape(query_positions)[1], training)
    if packing is None:
      batch, length = tf.unstack(tf.shape(x)[:2])
      rows = tf.reshape(x, [-1, hidden])
      spread = lambda y: y
    else:
      batch, length = packing.batch, packing.length
      rows, spread = x, packing.unpack_rows
    k = self._heads(spread(self.key(rows)), batch, length, training)
    v = self._heads(spread(self.value(rows)), batch, length, training)
    if queries is None:
      query_length = length
      q = self._heads(spread(self.query(rows)), batch, length, training)
    else:
      query_rows = queries if packing is not None else tf.reshape(queries, [-1, hidden])
      query_length = tf.shape(query_rows)[0] // batch
      q = self._heads(self.query(query_rows), batch, query_length, training)
    context = self._attend(q, k, v, mask_adder, batch, query_length, training)
    return context if packing is None or queries is not None else packing.pack_rows(context)

  def _attend(self, q, k, v, mask_adder, batch, query_length, training):
    """The attention of q over k and v ([batch, heads, length, head_size]),
    as [batch * query_length, hidden] rows."""
    scores = tf.matmul(q, k, transpose_b=True)  # [batch, heads, queries, keys]
    probs = fused.attention_softmax(scores, mask_adder, 1.0 / math.sqrt(float(self.head_size)))
    probs = self.dropout(probs, training=training)
    return self._rows(tf.matmul(probs, v), batch, query_length, training)


class TransformerLayer(Layer):
  """Attention and feed-forward blocks, each with residual + LayerNorm (post-norm)."""

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    hidden = config.hidden_size
    r = config.initializer_range
    self.attention = SelfAttention(config, name="self")
    self.attention_output = Dense(hidden, hidden, initializer_range=r, name="dense")
    self.attention_layer_norm = LayerNorm(hidden, name="LayerNorm")
    self.intermediate = Dense(hidden, config.intermediate_size,
                              activation=config.hidden_act, initializer_range=r,
                              name="intermediate_dense")
    self.output_dense = Dense(config.intermediate_size, hidden,
                              initializer_range=r, name="output_dense")
    self.output_layer_norm = LayerNorm(hidden, name="output_LayerNorm")
    self.dropout = Dropout(config.hidden_dropout_prob)

  def call(self, x, mask_adder, training=False, positions=None, packing=None):
    """With `positions` [batch, k], only those positions are computed (each
    still attends to all of x): [batch, k, hidden] instead of [batch, seq,
    hidden], for a last layer whose other positions nothing reads.

    With `packing` (packed_tokens.PackedTokens), x is the batch's real tokens as rows
    [rows, hidden], and so is the result; `positions` are then rows of x
    ([batch * k]), and the result [batch * k, hidden]."""
    if packing is not None:
      queries = None if positions is None else tf.gather(x, positions)
      attended = self.attention(x, mask_adder, training=training, queries=queries,
                                packing=packing)
      return self._feed_forward(attended, x if queries is None else queries, training)
    queries = None if positions is None else gather_positions(x, positions)
    attended = self.attention(x, mask_adder, training=training, queries=queries,
                              query_positions=positions)
    queries = x if queries is None else queries
    # [batch * length, hidden] rows from here on, as in the original.
    rows = self._feed_forward(attended, tf.reshape(queries, [-1, x.shape[-1]]), training)
    return tf.reshape(rows, tf.shape(queries))

  def _feed_forward(self, attended, residual, training):
    """The attention output's projection, residual and LayerNorm, then the
    feed-forward block, on [tokens, hidden] rows."""
    attended = self.dropout(self.attention_output(attended), training=training)
    attended = self.attention_layer_norm(attended + residual)
    hidden = self.output_dense(self.intermediate(attended))
    hidden = self.dropout(hidden, training=training)
    return self.output_layer_norm(hidden + attended)

  def original_names(self, prefix):
    """{original checkpoint name: variable} for this layer."""
    return {
        prefix + "attention/self/query/kernel": self.attention.query.kernel,
        prefix + "attention/self/query/bias": self.attention.query.bias,
        prefix + "attention/self/key/kernel": self.attention.key.kernel,
        prefix + "attention/self/key/bias": self.attention.key.bias,
        prefix + "attention/self/value/kernel": self.attention.value.kernel,
        prefix + "attention/self/value/bias": self.attention.value.bias,
        prefix + "attention/output/dense/kernel": self.attention_output.kernel,
        prefix + "attention/output/dense/bias": self.attention_output.bias,
        prefix + "attention/output/LayerNorm/beta": self.attention_layer_norm.beta,
        prefix + "attention/output/LayerNorm/gamma": self.attention_layer_norm.gamma,
        prefix + "intermediate/dense/kernel": self.intermediate.kernel,
        prefix + "intermediate/dense/bias": self.intermediate.bias,
        prefix + "output/dense/kernel": self.output_dense.kernel,
        prefix + "output/dense/bias": self.output_dense.bias,
        prefix + "output/LayerNorm/beta": self.output_layer_norm.beta,
        prefix + "output/LayerNorm/gamma": self.output_layer_norm.gamma,
    }


def gather_positions(sequence, positions):
  """[batch, seq, width] at [batch, k] positions -> [batch, k, width].

  One gather from the flattened [batch * seq, width] tensor, as the original
  gathered the masked positions.
  """
  shape = tf.shape(sequence)
  width = sequence.shape[-1]
  flat = tf.reshape(positions + shape[1] * tf.range(shape[0])[:, tf.newaxis], [-1])
  gathered = tf.gather(tf.reshape(sequence, [-1, width]), flat)
  return tf.reshape(gathered, [shape[0], -1, width])


def causal_mask_adder(length):
  """[1, 1, length, length] additive bias hiding every later position from
  each query (0 at or before it, -10000 after), for a left-to-right model."""
  future = 1.0 - tf.linalg.band_part(tf.ones([length, length]), -1, 0)
  return future[tf.newaxis, tf.newaxis] * -10000.0


def attention_mask_adder(input_mask):
  """[batch, seq] 1/0 mask -> [batch, 1, 1, seq] additive bias (0 or -10000)."""
  mask = tf.cast(input_mask, tf.float32)[:, tf.newaxis, tf.newaxis, :]
  return (1.0 - mask) * -10000.0
