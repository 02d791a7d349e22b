"""Output heads and their losses, as in run_pretraining / run_classifier / run_squad."""

import tensorflow as tf

from modeling import layers


class MaskedLMHead(layers.Layer):
  """Transform (dense + activation + LayerNorm), then logits tied to the word
  embeddings plus an output-only bias; returns float32 logits.

  It takes the encoder's vectors at the masked positions only ([batch, k,
  hidden], as `BertModel(..., output_positions=masked_lm_positions)` gives
  them) and returns [batch * k, vocab] logits.
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.transform = layers.Dense(config.hidden_size, config.hidden_size,
                                  activation=config.hidden_act,
                                  initializer_range=config.initializer_range,
                                  name="transform_dense")
    self.layer_norm = layers.LayerNorm(config.hidden_size, name="transform_LayerNorm")
    self.output_bias = self.add_weight(name="output_bias", shape=(config.vocab_size,),
                                       initializer="zeros")

  def call(self, masked_vectors, embedding_table):
    x = tf.reshape(masked_vectors, [-1, masked_vectors.shape[-1]])
    x = self.layer_norm(self.transform(x))
    logits = tf.matmul(x, tf.cast(embedding_table, x.dtype), transpose_b=True)
    return tf.nn.bias_add(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32))

  def original_names(self):
    return {
        "cls/predictions/transform/dense/kernel": self.transform.kernel,
        "cls/predictions/transform/dense/bias": self.transform.bias,
        "cls/predictions/transform/LayerNorm/beta": self.layer_norm.beta,
        "cls/predictions/transform/LayerNorm/gamma": self.layer_norm.gamma,
        "cls/predictions/output_bias": self.output_bias,
    }


class _OutputWeights(layers.Layer):
  """logits = x @ output_weights^T + output_bias, weights stored [out, in],
  drawn as `initializer` (a name in layers.INITIALIZERS) says."""

  def __init__(self, config, num_outputs, initializer="truncated_normal", **kwargs):
    super().__init__(**kwargs)
    self.output_weights = self.add_weight(
        name="output_weights", shape=(num_outputs, config.hidden_size),
        initializer=layers.INITIALIZERS[initializer](config.initializer_range))
    self.output_bias = self.add_weight(name="output_bias", shape=(num_outputs,),
                                       initializer="zeros")

  def logits(self, x):
    logits = tf.matmul(x, tf.cast(self.output_weights, x.dtype), transpose_b=True)
    return tf.nn.bias_add(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32))

  def _names(self, prefix):
    return {prefix + "output_weights": self.output_weights,
            prefix + "output_bias": self.output_bias}


class NextSentenceHead(_OutputWeights):
  """2-way classifier on the pooled output; returns float32 logits.
  Label 0 means B follows A, 1 means B is a random sentence."""

  def __init__(self, config, **kwargs):
    super().__init__(config, 2, **kwargs)

  def call(self, pooled_output):
    return self.logits(pooled_output)

  def original_names(self):
    return self._names("cls/seq_relationship/")


class ClassificationHead(_OutputWeights):
  """Dropout (0.1 while training, as the original) + dense to `num_labels`."""

  def __init__(self, config, num_labels, dropout_rate=0.1, **kwargs):
    super().__init__(config, num_labels, **kwargs)
    self.dropout = layers.Dropout(dropout_rate)

  def call(self, pooled_output, training=False):
    return self.logits(self.dropout(pooled_output, training=training))

  def original_names(self):
    return self._names("")


class TokenClassificationHead(_OutputWeights):
  """Dropout (0.1 while training) + dense to `num_labels` on every token's
  vector: [batch, seq, num_labels] logits (tagging, as named-entity
  recognition; Hugging Face's BertForTokenClassification)."""

  def __init__(self, config, num_labels, dropout_rate=0.1, **kwargs):
    super().__init__(config, num_labels, **kwargs)
    self.dropout = layers.Dropout(dropout_rate)

  def call(self, sequence_output, training=False):
    return self.logits(self.dropout(sequence_output, training=training))

  def original_names(self):
    return self._names("cls/token_classification/")


class SpanHead(_OutputWeights):
  """Per-token start and end logits, [batch, seq] each."""

  def __init__(self, config, **kwargs):
    super().__init__(config, 2, **kwargs)

  def call(self, sequence_output):
    logits = self.logits(sequence_output)  # [batch, seq, 2]
    return logits[:, :, 0], logits[:, :, 1]

  def original_names(self):
    return self._names("cls/squad/")


def masked_lm_loss(logits, label_ids, label_weights):
  """Weighted mean of per-prediction cross-entropy, as the original.

  Padding predictions have weight 0; the 1e-5 keeps an all-padding batch
  finite. Cross-entropy straight from the logits equals the original's
  -sum(one_hot * log_softmax) without materialising [predictions, vocab]
  one-hots.
  """
  label_ids = tf.reshape(tf.cast(label_ids, tf.int32), [-1])
  label_weights = tf.reshape(tf.cast(label_weights, tf.float32), [-1])
  per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_ids, logits=logits)
  loss = tf.reduce_sum(label_weights * per_example) / (tf.reduce_sum(label_weights) + 1e-5)
  return loss, per_example


def classification_loss(logits, labels):
  """Mean cross-entropy over the batch."""
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  return tf.reduce_mean(per_example), per_example


def tagging_loss(logits, tag_ids):
  """Per-token cross-entropy [batch, seq] and its weights: 1 where a token
  has a label (tag_ids >= 0), 0 elsewhere (later WordPieces, [CLS], [SEP],
  padding), as Hugging Face's token classification ignores label -100."""
  tag_ids = tf.cast(tag_ids, tf.int32)
  weights = tf.cast(tag_ids >= 0, tf.float32)
  per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.maximum(tag_ids, 0), logits=tf.cast(logits, tf.float32))
  return per_token * weights, weights


def regression_loss(predictions, targets):
  """Mean squared error for 1-output regression."""
  predictions = tf.reshape(tf.cast(predictions, tf.float32), [-1])
  per_example = tf.square(predictions - tf.reshape(tf.cast(targets, tf.float32), [-1]))
  return tf.reduce_mean(per_example), per_example


def span_loss_per_example(start_logits, end_logits, start_positions, end_positions):
  """The original's loss per example: the mean of the start and end
  cross-entropies over the sequence positions."""
  xent = tf.nn.sparse_softmax_cross_entropy_with_logits
  start = xent(labels=tf.reshape(tf.cast(start_positions, tf.int32), [-1]),
               logits=tf.cast(start_logits, tf.float32))
  end = xent(labels=tf.reshape(tf.cast(end_positions, tf.int32), [-1]),
             logits=tf.cast(end_logits, tf.float32))
  return (start + end) / 2.0
