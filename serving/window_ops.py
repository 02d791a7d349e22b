"""tasks/sliding_windows.py in TensorFlow ops, for exports that read long texts.

A batch of token sequences (a RaggedTensor) is cut into the same windows,
with the same max-context choice, as the Python code cuts each sequence, so
a SavedModel windows raw text inside the graph. A window is a row of its
own: `Windows` says which sequence it belongs to and where it starts and
ends, in sequence order.
"""

import collections

import tensorflow as tf

Windows = collections.namedtuple("Windows", ["sequence", "start", "end"])


def spans(sequences, window_length, stride, max_windows=None, empty_window=False):
  """Windows (int32 [windows] each) of every row of `sequences` [batch,
  (tokens)], as sliding_windows.spans cuts them.

  window_length: a scalar or [batch]; stride, max_windows: Python ints (or
  scalars); empty_window: an empty row gets one empty window, not none.
  """
  num_tokens = tf.cast(sequences.row_lengths(), tf.int32)
  window_length = tf.broadcast_to(tf.cast(window_length, tf.int32), tf.shape(num_tokens))
  step = tf.maximum(tf.minimum(tf.cast(stride, tf.int32), window_length), 1)
  # A first window, then one per step until the rest fits.
  count = 1 + (tf.maximum(num_tokens - window_length, 0) + step - 1) // step
  if max_windows is not None:
    count = tf.minimum(count, max_windows)
  if not empty_window:
    count = tf.where(num_tokens > 0, count, 0)
  sequence = tf.repeat(tf.range(tf.shape(num_tokens)[0]), count)
  start = tf.ragged.range(count).flat_values * tf.gather(step, sequence)
  end = tf.minimum(start + tf.gather(window_length, sequence), tf.gather(num_tokens, sequence))
  return Windows(sequence, start, end)


def gather_ranges(ragged, rows, starts, limits):
  """ragged[rows[i], starts[i]:limits[i]] for each i: a RaggedTensor [len(rows),
  (limits - starts)], e.g. each window's tokens (gather_ranges(sequences,
  *windows)) or any values aligned with them (sequences.with_flat_values)."""
  offsets = tf.gather(tf.cast(ragged.row_splits, starts.dtype), rows)
  return tf.gather(ragged.flat_values, tf.ragged.range(starts, limits) + offsets[:, None])


def max_context(sequences, windows):
  """[windows, (window length)] bool: whether the window is, of all the
  windows holding the token, the one sliding_windows.max_context_windows
  picks (the score in doubles, as Python's floats)."""
  length = windows.end - windows.start
  position = tf.ragged.range(length)
  score = tf.cast(tf.minimum(position, (length - 1)[:, None] - position), tf.float64)
  score = score + 0.01 * tf.cast(length, tf.float64)[:, None]
  # Each position's token, as an index into sequences.flat_values.
  offsets = tf.gather(tf.cast(sequences.row_splits, tf.int32), windows.sequence)
  token = (position + (offsets + windows.start)[:, None]).flat_values
  num_tokens = tf.cast(sequences.row_splits[-1], tf.int32)
  best = tf.math.unsorted_segment_max(score.flat_values, token, num_tokens)
  window = tf.cast(position.value_rowids(), tf.int32)
  num_windows = tf.shape(windows.sequence)[0]
  winner = tf.math.unsorted_segment_min(  # The earliest window with the best score.
      tf.where(tf.equal(score.flat_values, tf.gather(best, token)), window, num_windows),
      token, num_tokens)
  return position.with_flat_values(tf.equal(tf.gather(winner, token), window))


def column(value, rows):
  """A [rows, 1] RaggedTensor of `value`: the [CLS] or [SEP] framing each window."""
  return tf.RaggedTensor.from_tensor(tf.fill([rows, 1], value))
