"""Model inputs from token ids with TensorFlow ops, for exported models.

`pack_pair` makes, inside a graph, exactly the features that
`tasks.classification.features.convert_single_example` makes in Python: [CLS] A [SEP]
(B [SEP]), the pair truncated longest-first, segment ids, zero padding.
"""

import tensorflow as tf


def truncated_pair_lengths(len_a, len_b, max_length):
  """The lengths `truncate_seq_pair` leaves, in closed form.

  That loop removes a token from the longer sequence (B on ties) until the
  total fits. So if the shorter one fits in half of `max_length`, only the
  longer is cut, to what is left; otherwise both end at half, A taking the
  odd token.
  """
  shorter = tf.minimum(len_a, len_b)
  fits = len_a + len_b <= max_length
  only_longer_cut = 2 * shorter <= max_length
  half_b = max_length // 2
  half_a = max_length - half_b
  new_a = tf.where(fits, len_a, tf.where(
      only_longer_cut, tf.where(len_a > len_b, max_length - len_b, len_a), half_a))
  new_b = tf.where(fits, len_b, tf.where(
      only_longer_cut, tf.where(len_a > len_b, len_b, max_length - len_a), half_b))
  return new_a, new_b


def pack_pair(ids_a, ids_b, max_seq_length, cls_id, sep_id):
  """input_ids, input_mask, segment_ids [batch, max_seq_length] int32.

  ids_a, ids_b: int32 RaggedTensors [batch, (tokens)]; ids_b may be None. A
  row whose B has no tokens is packed as a single sentence, as the original
  does for an empty `text_b`.
  """
  ids_a = tf.cast(ids_a, tf.int32)
  batch = ids_a.nrows(out_type=tf.int32)
  len_a = tf.cast(ids_a.row_lengths(), tf.int32)
  if ids_b is None:
    ids_b = tf.RaggedTensor.from_row_lengths(
        tf.zeros([0], tf.int32), tf.zeros([batch], tf.int64))
  ids_b = tf.cast(ids_b, tf.int32)
  len_b = tf.cast(ids_b.row_lengths(), tf.int32)
  has_b = len_b > 0
  pair_a, pair_b = truncated_pair_lengths(len_a, len_b, max_seq_length - 3)
  keep_a = tf.where(has_b, pair_a, tf.minimum(len_a, max_seq_length - 2))
  keep_b = tf.where(has_b, pair_b, 0)

  def first(ids, counts):
    mask = tf.ragged.range(ids.row_lengths()) < tf.cast(counts[:, None], tf.int64)
    return tf.ragged.boolean_mask(ids, mask)

  def column(value):
    return tf.RaggedTensor.from_tensor(tf.fill([batch, 1], value))

  sep_b = tf.ragged.boolean_mask(column(sep_id), has_b[:, None])
  tokens = tf.concat([column(cls_id), first(ids_a, keep_a), column(sep_id),
                      first(ids_b, keep_b), sep_b], axis=1)
  segments = tf.concat([tf.zeros_like(column(0)), tf.zeros_like(first(ids_a, keep_a)),
                        tf.zeros_like(column(0)), tf.ones_like(first(ids_b, keep_b)),
                        tf.ones_like(sep_b)], axis=1)
  shape = [batch, max_seq_length]
  input_ids = tokens.to_tensor(0, shape=shape)
  input_mask = tf.ones_like(tokens).to_tensor(0, shape=shape)
  segment_ids = segments.to_tensor(0, shape=shape)
  return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
