"""Pre-training instances as `tf.train.Example` TFRecords, the original's format.

Features (all fixed length): input_ids, input_mask, segment_ids
[max_seq_length] int64; masked_lm_positions, masked_lm_ids [max_predictions]
int64 and masked_lm_weights [max_predictions] float (1.0 for real predictions,
0.0 for padding); next_sentence_labels [1] int64 (1 = B is a random next).

Building protos one by one in Python cost the original most of its time, so
records are serialised here by a compiled encoder of the protobuf wire format
(checked against the protobuf library in the tests), in batches.
"""

import logging
import time

import numba
import numpy as np

from data_prep import tfrecord_io
from data_prep.pretraining_instances import _fill_row

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def name_to_features(max_seq_length, max_predictions_per_seq):
  """The parsing spec for these records (for tf.io.parse_single_example)."""
  import tensorflow as tf
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }


def _feature_keys():
  """Per feature: the map-entry key bytes (field 1 of the entry)."""
  return [np.frombuffer(name.encode("ascii"), np.uint8).copy() for name in FEATURE_NAMES]


@numba.njit(cache=True)
def _varint_size(value):
  size = 1
  while value >= 128:
    value >>= 7
    size += 1
  return size


@numba.njit(cache=True)
def _put_varint(buf, pos, value):
  while value >= 128:
    buf[pos] = (value & 127) | 128
    value >>= 7
    pos += 1
  buf[pos] = value
  return pos + 1


@numba.njit(cache=True)
def _int_list_sizes(values):
  payload = 0
  for v in values:
    payload += _varint_size(v)
  # Int64List{value(1): packed}; Feature{int64_list(3): Int64List}
  int64_list = 1 + _varint_size(payload) + payload
  feature = 1 + _varint_size(int64_list) + int64_list
  return payload, int64_list, feature


@numba.njit(cache=True)
def _entry_size(key_len, feature):
  return 1 + _varint_size(key_len) + key_len + 1 + _varint_size(feature) + feature


@numba.njit(cache=True)
def _framed_entry_size(key_len, feature):
  """An entry with its Features.feature tag and length prefix."""
  entry = _entry_size(key_len, feature)
  return 1 + _varint_size(entry) + entry


@numba.njit(cache=True)
def _put_entry_head(buf, pos, key, feature_size):
  entry = _entry_size(len(key), feature_size)
  buf[pos] = 0x0A  # Features.feature (map entry), length-delimited
  pos = _put_varint(buf, pos + 1, entry)
  buf[pos] = 0x0A  # entry.key
  pos = _put_varint(buf, pos + 1, len(key))
  for b in key:
    buf[pos] = b
    pos += 1
  buf[pos] = 0x12  # entry.value (Feature)
  return _put_varint(buf, pos + 1, feature_size)


@numba.njit(cache=True)
def _put_int_feature(buf, pos, key, values):
  payload, int64_list, feature = _int_list_sizes(values)
  pos = _put_entry_head(buf, pos, key, feature)
  buf[pos] = 0x1A  # Feature.int64_list
  pos = _put_varint(buf, pos + 1, int64_list)
  buf[pos] = 0x0A  # Int64List.value, packed
  pos = _put_varint(buf, pos + 1, payload)
  for v in values:
    pos = _put_varint(buf, pos, v)
  return pos


@numba.njit(cache=True)
def _put_float_feature(buf, pos, key, values):
  payload = 4 * len(values)
  float_list = 1 + _varint_size(payload) + payload
  feature = 1 + _varint_size(float_list) + float_list
  pos = _put_entry_head(buf, pos, key, feature)
  buf[pos] = 0x12  # Feature.float_list
  pos = _put_varint(buf, pos + 1, float_list)
  buf[pos] = 0x0A  # FloatList.value, packed
  pos = _put_varint(buf, pos + 1, payload)
  raw = values.astype(np.float32).view(np.uint8)
  for b in raw:
    buf[pos] = b
    pos += 1
  return pos


@numba.njit(cache=True)
def _encode_batch(order, tokens, spans, is_random_next, num_masked,
                  masked_positions, masked_labels, masked_replacements, cls_id,
                  sep_id, max_seq_length, k0, k1, k2, k3, k4, k5, k6, buf,
                  offsets):
  """Serialises instances `order` into buf; record j is buf[offsets[j]:offsets[j+1]]."""
  seq = max_seq_length
  npred = masked_positions.shape[1]
  ids = np.zeros(seq, np.int64)
  segs = np.zeros(seq, np.int64)
  mask = np.zeros(seq, np.int64)
  mpos = np.zeros(npred, np.int64)
  mids = np.zeros(npred, np.int64)
  weights = np.zeros(npred, np.float32)
  label = np.zeros(1, np.int64)
  payload = 4 * npred
  float_list = 1 + _varint_size(payload) + payload
  weights_entry = _framed_entry_size(len(k5), 1 + _varint_size(float_list) + float_list)
  pos = 0
  for j in range(len(order)):
    i = order[j]
    n = _fill_row(ids, segs, tokens, spans[i], cls_id, sep_id)
    m = num_masked[i]
    for t in range(seq):
      mask[t] = 1 if t < n else 0
    for t in range(npred):
      if t < m:
        ids[masked_positions[i, t]] = masked_replacements[i, t]
        mpos[t] = masked_positions[i, t]
        mids[t] = masked_labels[i, t]
        weights[t] = 1.0
      else:
        mpos[t] = 0
        mids[t] = 0
        weights[t] = 0.0
    label[0] = is_random_next[i]
    # Example.features' length comes first, so size the entries before writing.
    body = weights_entry
    for key, values in ((k0, ids), (k1, mask), (k2, segs), (k3, mpos), (k4, mids),
                        (k6, label)):
      body += _framed_entry_size(len(key), _int_list_sizes(values)[2])
    offsets[j] = pos
    buf[pos] = 0x0A  # Example.features
    pos = _put_varint(buf, pos + 1, body)
    pos = _put_int_feature(buf, pos, k0, ids)
    pos = _put_int_feature(buf, pos, k1, mask)
    pos = _put_int_feature(buf, pos, k2, segs)
    pos = _put_int_feature(buf, pos, k3, mpos)
    pos = _put_int_feature(buf, pos, k4, mids)
    pos = _put_float_feature(buf, pos, k5, weights)
    pos = _put_int_feature(buf, pos, k6, label)
  offsets[len(order)] = pos
  return pos


def _max_record_bytes(max_seq_length, max_predictions_per_seq):
  # Generous bound: 10 bytes per varint, 64 bytes of framing per feature.
  return (3 * max_seq_length * 10 + 2 * max_predictions_per_seq * 10 +
          4 * max_predictions_per_seq + 10 + 7 * 64 + 16)


def iter_serialized_batches(instances, order, batch_size=4096):
  """Yields (uint8 data, offsets) for consecutive batches of `order`."""
  keys = _feature_keys()
  record_bytes = _max_record_bytes(instances.max_seq_length,
                                   instances.max_predictions_per_seq)
  buf = np.empty(batch_size * record_bytes, np.uint8)
  offsets = np.empty(batch_size + 1, np.int64)
  for lo in range(0, len(order), batch_size):
    part = np.ascontiguousarray(order[lo:lo + batch_size])
    _encode_batch(part, instances.tokens, instances.spans,
                  instances.is_random_next, instances.num_masked,
                  instances.masked_positions, instances.masked_labels,
                  instances.masked_replacements, instances.cls_id,
                  instances.sep_id, instances.max_seq_length, *keys, buf,
                  offsets)
    yield buf, offsets[:len(part) + 1]


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
  with tfrecord_io.atomic_writers(output_files) as writers:
    for w, writer in enumerate(writers):
      for buf, offsets in iter_serialized_batches(instances, order[w::len(writers)]):
        writer.write_batch(buf, offsets)
        done += len(offsets) - 1
        if time.time() - last_log >= log_every_seconds:
          logging.info("Wrote %d of %d instances (%.0f/s).", done, len(order),
                       done / (time.time() - start))
          last_log = time.time()
  return len(order)
