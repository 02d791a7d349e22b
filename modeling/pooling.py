"""Token vectors pooled into one vector per text, as sentence-transformers'
Pooling and Normalize modules make them: what sentence vectors (embed.py,
its export), pooled contextual features (extract_features) and the
sentence-embedding head share, written once."""

import tensorflow as tf


POOLINGS = ("cls", "mean", "max")


def pooled(vectors, input_mask, pooling):
  """Token vectors [batch, ..., seq, hidden] pooled over each row's real
  tokens (input_mask [batch, seq]) to [batch, ..., hidden]: the [CLS]
  vector ("cls"), the mean ("mean") or the largest value of each component
  ("max"). As sentence-transformers' Pooling pools: padding counts for
  nothing, so a batch's padding leaves every row's vector as it is."""
  if pooling == "cls":
    return vectors[..., 0, :]
  if pooling not in POOLINGS:
    raise ValueError("pooling must be one of %s, not %r." % (POOLINGS, pooling))
  mask = tf.cast(input_mask, tf.bool)
  mask = tf.reshape(mask, tf.concat([tf.shape(mask)[:1], tf.ones([vectors.shape.rank - 3],
                                                                   tf.int32),
                                     tf.shape(mask)[1:], [1]], axis=0))
  if pooling == "max":
    lowest = tf.constant(-float("inf"), vectors.dtype)
    return tf.reduce_max(tf.where(mask, vectors, lowest), axis=-2)
  weights = tf.cast(mask, vectors.dtype)
  return tf.reduce_sum(vectors * weights, axis=-2) / tf.maximum(
      tf.reduce_sum(weights, axis=-2), 1.0)


def l2_normalized(vectors):
  """Each vector (the last axis) divided by its length, as
  sentence-transformers' Normalize (torch's F.normalize: a length under
  1e-12 counts as 1e-12)."""
  return vectors / tf.maximum(tf.norm(vectors, axis=-1, keepdims=True), 1e-12)


def sentence_vectors(sequence_output, input_mask, pooling, normalize):
  """One float32 vector per row [batch, hidden] from the last layer's token
  vectors: pooled (see `pooled`), then L2-normalised if `normalize`. What
  embed.py writes and its export returns."""
  vectors = pooled(tf.cast(sequence_output, tf.float32), input_mask, pooling)
  return l2_normalized(vectors) if normalize else vectors
