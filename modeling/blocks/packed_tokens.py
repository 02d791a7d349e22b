"""Training on a padded batch's real tokens only (PackedTokens), and where
that cannot be: where every shape must be known when compiling."""

import tensorflow as tf


def static_shapes_required():
  """True where every tensor's shape must be known when compiling: inside an
  XLA-compiled function (--use_xla's training step) and on TPUs."""
  from tensorflow.python.ops import control_flow_util  # pylint: disable=g-import-not-at-top
  return (isinstance(tf.distribute.get_strategy(), tf.distribute.TPUStrategy) or
          control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


class PackedTokens(object):
  """The real tokens of a padded batch ([batch, seq] `input_mask`) as rows.

  Dense layers, layer norms and dropout treat each token alone, so in
  training they can run on the real tokens only (`pack`), and only the
  attention on the padded batch (`unpack_rows`): most of a step's work
  when batches are mostly padding. A head that reads every position
  (SQuAD's, whose loss also counts the padding, as the original's did)
  cannot use it. Packed rows are rounded up to `rows_per_example` times the
  batch with filler rows (zeros at first), so that the kernels compiled
  per shape (modeling/blocks/fused.py) meet no more shapes than padded batches
  bring; the fillers never reach a real token.
  """

  def __init__(self, input_mask, rows_per_example=8):
    shape = tf.shape(input_mask)
    self.batch, self.length = shape[0], shape[1]
    self.positions = self.batch * self.length
    real = tf.cast(tf.where(tf.reshape(input_mask, [-1]) > 0)[:, 0], tf.int32)
    count = tf.shape(real)[0]
    multiple = rows_per_example * self.batch
    fillers = (count + multiple - 1) // multiple * multiple - count
    # Row `positions` (one past the last) is a zero row: fillers read it.
    self.index = tf.concat([real, tf.fill([fillers], self.positions)], 0)[:, tf.newaxis]
    self._row_of_position = tf.scatter_nd(real[:, tf.newaxis], tf.range(count),
                                          [self.positions])

  def pack(self, sequence):
    """[batch, seq, width] -> [rows, width]."""
    return self.pack_rows(tf.reshape(sequence, [-1, sequence.shape[-1]]))

  def pack_rows(self, flat):
    """[batch * seq, width] -> [rows, width]."""
    flat = tf.concat([flat, tf.zeros([1, flat.shape[-1]], flat.dtype)], 0)
    return tf.gather_nd(flat, self.index)

  def unpack_rows(self, rows):
    """[rows, width] -> [batch * seq, width], zeros at the padding."""
    width = rows.shape[-1]
    return tf.scatter_nd(self.index, rows, [self.positions + 1, width])[:-1]

  def unpack(self, rows):
    """[rows, width] -> [batch, seq, width], zeros at the padding."""
    return tf.reshape(self.unpack_rows(rows), [self.batch, self.length, rows.shape[-1]])

  def rows_at(self, positions):
    """The rows of [batch, k] positions (real tokens), as [batch * k]."""
    flat = positions + self.length * tf.range(self.batch)[:, tf.newaxis]
    return tf.gather(self._row_of_position, tf.reshape(flat, [-1]))
