"""Masking on the fly (RoBERTa's dynamic masking): each time a pre-training
record is read, its masked tokens are put back and it is masked afresh.

The rules are the static generator's, by the same code
(instances.mask_row): the candidates are every token but [CLS] and the
[SEP]s, min(max_predictions_per_seq, max(1, round(length * masked_lm_prob)))
of them are chosen (whole words with whole-word masking), 80% become
[MASK], 10% a random vocabulary word, 10% stay. The random stream of a
record is seeded by (seed, its position in the training stream), so masks
change from epoch to epoch, a run is reproducible, and a resumed run (which
skips the records it has consumed) masks the rest as the uninterrupted run.
"""

import numpy as np
import tensorflow as tf

from data_prep.pretraining import instances
from data_prep.pretraining import python_random as pr

_STREAM_BITS = 48  # Positions in the stream below 2**48; the seed above.


def restored_input_ids(features):
  """input_ids with the masked positions given back their original ids
  (masked_lm_ids), for one record or a batch."""
  input_ids = features["input_ids"]
  length = tf.shape(input_ids)[-1]
  weights = tf.cast(features["masked_lm_weights"] > 0, input_ids.dtype)
  # [..., predictions, length]: where each real masked position is.
  marked = tf.one_hot(features["masked_lm_positions"], length, dtype=input_ids.dtype) * weights[
      ..., None]
  restored = tf.reduce_sum(marked * tf.cast(features["masked_lm_ids"], input_ids.dtype)[
      ..., None], axis=-2)
  return tf.where(tf.reduce_sum(marked, axis=-2) > 0, restored, input_ids)


class DynamicMasking(object):
  """Call on a batch: (positions in the stream [batch], decoded records) in
  a tf.data map after batching (one call into Python per batch)."""

  def __init__(self, vocab, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask,
               seed):
    self.vocabulary = instances.Vocabulary(vocab)
    self.masked_lm_prob = masked_lm_prob
    self.max_predictions = max_predictions_per_seq
    self.do_whole_word_mask = do_whole_word_mask
    self.seed = seed

  def mask(self, stream_positions, input_ids, input_mask, segment_ids):
    """numpy, a batch of records' unmasked tokens: (input_ids,
    masked_lm_positions, masked_lm_ids, masked_lm_weights) masked afresh."""
    v = self.vocabulary
    rows = input_ids.astype(np.int32)
    shape = (len(rows), self.max_predictions)
    positions = np.zeros(shape, np.int16)
    labels = np.zeros(shape, np.int32)
    replacements = np.zeros(shape, np.int32)
    weights = np.zeros(shape, np.float32)
    for i, row in enumerate(rows):
      state = pr.state_from_seed((self.seed << _STREAM_BITS) + int(stream_positions[i]))
      length = int(input_mask[i].sum())
      in_b = segment_ids[i, :length] == 1
      first_b = int(np.argmax(in_b)) if in_b.any() else length
      count = instances.mask_row(
          state, row, length, first_b, v.is_continuation, v.random_word_ids, v.mask_id,
          self.masked_lm_prob, self.max_predictions, self.do_whole_word_mask, positions[i],
          labels[i], replacements[i])
      weights[i, :count] = 1.0
    return rows, positions.astype(np.int32), labels, weights

  def __call__(self, stream_positions, features):
    original = restored_input_ids(features)
    outputs = tf.numpy_function(
        self.mask, [stream_positions, original, features["input_mask"],
                    features["segment_ids"]],
        [tf.int32, tf.int32, tf.int32, tf.float32], stateful=False)
    features = dict(features)
    for name, value in zip(("input_ids", "masked_lm_positions", "masked_lm_ids",
                            "masked_lm_weights"), outputs):
      features[name] = tf.ensure_shape(tf.cast(value, features[name].dtype),
                                       features[name].shape)
    return features
