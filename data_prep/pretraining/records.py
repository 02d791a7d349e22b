"""Pre-training instances as `tf.train.Example` TFRecords, the original's format.

Features (all fixed length): input_ids, input_mask, segment_ids
[max_seq_length] int64; masked_lm_positions, masked_lm_ids [max_predictions]
int64 and masked_lm_weights [max_predictions] float (1.0 for real predictions,
0.0 for padding); next_sentence_labels [1] int64 (1 = B is a random next).

Instances are turned into feature columns by compiled code, a batch at a
time, and serialised by the project's compiled encoder (plumbing.tf_example);
the tf.data reader of these files is `data_prep.pretraining.dataset`.
"""

import time

from absl import logging
import numba
import numpy as np

from data_prep.pretraining import instances as instances_lib
from plumbing import stop_request
from plumbing import tf_example
from plumbing import tfrecord

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def example_spec(max_seq_length, max_predictions_per_seq):
  """The record format, in the original's feature order."""
  seq, predictions = [max_seq_length], [max_predictions_per_seq]
  spec = tf_example.ExampleSpec([
      ("input_ids", "int64", seq), ("input_mask", "int64", seq),
      ("segment_ids", "int64", seq), ("masked_lm_positions", "int64", predictions),
      ("masked_lm_ids", "int64", predictions), ("masked_lm_weights", "float32", predictions),
      ("next_sentence_labels", "int64", [1])])
  # The generator writes many records and has numba loaded already.
  spec.compile_after_rows = 0
  return spec


def name_to_features(max_seq_length, max_predictions_per_seq):
  """The parsing spec for these records (for tf.io.parse_single_example)."""
  return example_spec(max_seq_length, max_predictions_per_seq).parsing_spec()


_INT_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "next_sentence_labels")


@numba.njit(cache=True)
def _fill_columns(order, tokens, spans, is_random_next, num_masked, masked_positions,
                  masked_labels, masked_replacements, cls_id, sep_id, starts, ints, floats):
  """Row j of ints/floats: instance order[j], each int feature at its column
  `starts` (in _INT_FEATURES order), the weights in floats."""
  ids, mask, segments, positions, labels, label = starts
  seq = mask - ids
  npred = floats.shape[1]
  for j in range(len(order)):
    i = order[j]
    row = ints[j]
    n = instances_lib.fill_row(row[ids:ids + seq], row[segments:segments + seq], tokens,
                               spans[i], cls_id, sep_id)
    row[mask:mask + n] = 1
    row[mask + n:mask + seq] = 0
    m = num_masked[i]
    for t in range(npred):
      if t < m:
        row[ids + masked_positions[i, t]] = masked_replacements[i, t]
        row[positions + t] = masked_positions[i, t]
        row[labels + t] = masked_labels[i, t]
        floats[j, t] = 1.0
      else:
        row[positions + t] = 0
        row[labels + t] = 0
        floats[j, t] = 0.0
    row[label] = is_random_next[i]


def iter_serialized_batches(instances, order, batch_size=4096):
  """Yields (uint8 data, offsets) for consecutive batches of `order`."""
  spec = example_spec(instances.max_seq_length, instances.max_predictions_per_seq)
  starts = np.array([spec.int_columns[name].start for name in _INT_FEATURES], np.int64)
  ints, floats = spec.empty_columns(batch_size)
  buf = np.empty(batch_size * spec.max_record_bytes(), np.uint8)
  for lo in range(0, len(order), batch_size):
    part = np.ascontiguousarray(order[lo:lo + batch_size])
    n = len(part)
    _fill_columns(part, instances.tokens, instances.spans, instances.is_random_next,
                  instances.num_masked, instances.masked_positions, instances.masked_labels,
                  instances.masked_replacements, instances.cls_id, instances.sep_id, starts,
                  ints[:n], floats[:n])
    yield spec.encode_batch(ints[:n], floats[:n], buf)


def iter_serialized(instances, order):
  """Yields each serialised Example as bytes (convenient, slower)."""
  for buf, offsets in iter_serialized_batches(instances, order):
    for j in range(len(offsets) - 1):
      yield buf[offsets[j]:offsets[j + 1]].tobytes()


def write_instances(instances, order, output_files, log_every_seconds=10.0):
  """Writes records round-robin over `output_files`, each atomically.

  Record k of `order` goes to file k % len(output_files), as in the original.
  Files appear under their final names only when every record is written.
  """
  start = last_log = time.time()
  done = 0
  with tfrecord.atomic_writers(output_files) as writers:
    for w, writer in enumerate(writers):
      for buf, offsets in iter_serialized_batches(instances, order[w::len(writers)]):
        stop_request.check("while writing records")
        writer.write_batch(buf, offsets)
        done += len(offsets) - 1
        if time.time() - last_log >= log_every_seconds:
          logging.info("Wrote %d of %d instances (%.0f/s).", done, len(order),
                       done / (time.time() - start))
          last_log = time.time()
  return len(order)
