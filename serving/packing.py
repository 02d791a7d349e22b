"""Model inputs from token ids with TensorFlow ops, for exported models.

`pack_pair` makes, inside a graph, exactly the features that
`tasks.classification.features.convert_single_example` makes in Python: [CLS] A [SEP]
(B [SEP]), the pair truncated longest-first, segment ids, zero padding;
`pack_windows` makes tasks/classification/windows.py's windows of long texts.
"""

import tensorflow as tf

from serving import window_ops


def _first(ids, counts):
  """The first `counts[i]` tokens of each row of a RaggedTensor."""
  mask = tf.ragged.range(ids.row_lengths()) < tf.cast(counts[:, None], tf.int64)
  return tf.ragged.boolean_mask(ids, mask)


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


def pack_pair(ids, max_seq_length, cls_id, sep_id, sentence_pair=True):
  """input_ids, input_mask, segment_ids [batch, max_seq_length] int32.

  ids: a RaggedTensor of token ids, [batch, (tokens)] for single texts; for
  sentence pairs [2 * batch, (tokens)], the A texts' rows then the B texts'
  (one tokenizer call for both sides). A row whose B has no tokens is packed
  as a single sentence, as the original does for an empty `text_b`.

  Built as one gather over a [batch, max_seq_length] grid of positions, not
  with ragged concatenation: a served request runs every op of this once,
  and the ragged ops cost about twenty times as many.
  """
  starts = tf.cast(ids.row_starts(), tf.int32)
  lengths = tf.cast(ids.row_lengths(), tf.int32)
  if sentence_pair:
    start_a, start_b = tf.unstack(tf.reshape(starts, [2, -1]))
    len_a, len_b = tf.unstack(tf.reshape(lengths, [2, -1]))
  else:
    start_a, len_a = starts, lengths
    start_b, len_b = tf.zeros_like(starts), tf.zeros_like(lengths)
  has_b = len_b > 0
  pair_a, pair_b = truncated_pair_lengths(len_a, len_b, max_seq_length - 3)
  keep_a = tf.where(has_b, pair_a, tf.minimum(len_a, max_seq_length - 2))[:, None]
  keep_b = tf.where(has_b, pair_b, 0)[:, None]
  has_b = has_b[:, None]
  # Each row is [CLS] A [SEP] (B [SEP]) then padding; B starts at keep_a + 2.
  position = tf.range(max_seq_length)[None, :]
  b_start = keep_a + 2
  length = tf.where(has_b, b_start + keep_b + 1, b_start)
  in_a = (position >= 1) & (position <= keep_a)
  in_b = (position >= b_start) & (position < b_start + keep_b)
  is_sep = tf.equal(position, keep_a + 1) | (has_b & tf.equal(position, b_start + keep_b))
  # One table to gather from: padding, [CLS], [SEP], then the texts' ids.
  table = tf.concat([[0, cls_id, sep_id], tf.cast(ids.flat_values, tf.int32)], axis=0)
  index = tf.where(in_a, 2 + start_a[:, None] + position,
                   tf.where(in_b, 3 + start_b[:, None] + position - b_start,
                            tf.where(is_sep, 2, tf.cast(tf.equal(position, 0), tf.int32))))
  is_real = position < length
  return {"input_ids": tf.gather(table, index),
          "input_mask": tf.cast(is_real, tf.int32),
          "segment_ids": tf.cast(is_real & has_b & (position >= b_start), tf.int32)}


def pack_windows(ids_a, ids_b, max_seq_length, cls_id, sep_id, stride, max_windows):
  """input_ids, input_mask, segment_ids [batch, windows, max_seq_length]:
  each example's windows as tasks/classification/windows.py makes them
  (`windows` is the most any example of the batch needs; the others' extra
  windows are all zeros).

  A pair that does not fit slides over B with A cut to half of the space; a
  single text slides over A; the window bodies start every `stride` tokens.
  """
  ids_a = tf.cast(ids_a, tf.int32)
  batch = ids_a.nrows(out_type=tf.int64)
  len_a = ids_a.row_lengths()
  if ids_b is None:
    ids_b = tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([batch], tf.int64))
  ids_b = tf.cast(ids_b, tf.int32)
  len_b = ids_b.row_lengths()
  has_b = len_b > 0
  space = tf.constant(max_seq_length - 3, tf.int64)
  none = tf.zeros_like(len_a)
  keep_a = tf.where(has_b, tf.where(len_a + len_b <= space, len_a,
                                    tf.minimum(len_a, space // 2)), none)
  prefix = _first(ids_a, keep_a)
  # The body each example slides over: B in a pair, else A.
  body = tf.concat([_first(ids_a, tf.where(has_b, none, len_a)), _first(ids_b, len_b)], axis=1)
  window_length = tf.where(has_b, space - keep_a, space + 1)
  spans = window_ops.spans(body, window_length, stride, max_windows, empty_window=True)
  example = spans.sequence
  window = window_ops.gather_ranges(body, *spans)
  window_has_b = tf.gather(has_b, example)
  lengths = spans.end - spans.start
  in_first = _first(window, tf.where(window_has_b, tf.zeros_like(lengths), lengths))
  in_second = _first(window, tf.where(window_has_b, lengths, tf.zeros_like(lengths)))
  head = tf.concat([tf.gather(prefix, example), in_first], axis=1)
  rows = tf.shape(example)[0]
  column = lambda value: window_ops.column(value, rows)
  sep_b = tf.ragged.boolean_mask(column(sep_id), window_has_b[:, None])
  tokens = tf.concat([column(cls_id), head, column(sep_id), in_second, sep_b], axis=1)
  segments = tf.concat([tf.zeros_like(column(0)), tf.zeros_like(head), tf.zeros_like(column(0)),
                        tf.ones_like(in_second), tf.ones_like(sep_b)], axis=1)
  shape = tf.stack([rows, max_seq_length])

  def per_example(values):
    return tf.RaggedTensor.from_value_rowids(values.to_tensor(0, shape=shape),
                                             tf.cast(example, tf.int64), nrows=batch).to_tensor(0)

  return {"input_ids": per_example(tokens), "input_mask": per_example(tf.ones_like(tokens)),
          "segment_ids": per_example(segments)}
