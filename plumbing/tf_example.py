"""`tf.train.Example` records: the project's one encoder, decoder and reader.

The records the model reads (pre-training instances, each fine-tuning task's
features) are Examples of fixed-shape int64 and float features.
`ExampleSpec` names them once, in the order they are serialised, and serves
both directions:
  * writing: `encode_batch` serialises thousands of records per call with a
    compiled encoder of the protobuf wire format (no TensorFlow, no protobuf
    objects: building protos one by one cost the original most of its data
    generation time). The bytes are what protobuf writes for the same
    entries in the same order (tests/test_tf_example.py);
  * reading: `parsing_spec` and `decode` for tf.data, `read_records`, the
    one tf.data reader of a task's record file (int64 features come back as
    int32, as TPUs want), and `batched`.
(extract_features' optional TFRecord output is not model input: it holds
strings and per-line shapes, and is written with TensorFlow's own protos.)
"""

import collections

import numba
import numpy as np

from plumbing import tfrecord

Feature = collections.namedtuple("Feature", ["name", "dtype", "shape"])

_INT, _FLOAT = 0, 1


@numba.njit(cache=True)
def _varint_size(value):
  size = 1
  while value >= 128:
    value >>= np.uint64(7)
    size += 1
  return size


@numba.njit(cache=True)
def _put_varint(buf, pos, value):
  while value >= 128:
    buf[pos] = (value & np.uint64(127)) | np.uint64(128)
    value >>= np.uint64(7)
    pos += 1
  buf[pos] = value
  return pos + 1


@numba.njit(cache=True)
def _feature_size(kinds, starts, lengths, ints, floats, row, f):
  """(payload bytes, list message bytes, Feature message bytes) of feature f."""
  if kinds[f] == _INT:
    payload = 0
    for k in range(starts[f], starts[f] + lengths[f]):
      payload += _varint_size(np.uint64(ints[row, k]))
  else:
    payload = 4 * lengths[f]
  values = 1 + _varint_size(np.uint64(payload)) + payload if payload else 0
  return payload, values, 1 + _varint_size(np.uint64(values)) + values


@numba.njit(cache=True)
def _entry_size(key_length, feature):
  return (1 + _varint_size(np.uint64(key_length)) + key_length + 1 +
          _varint_size(np.uint64(feature)) + feature)


@numba.njit(cache=True)
def _encode(kinds, starts, lengths, keys, key_offsets, ints, floats, buf, offsets):
  """Serialises every row of ints/floats into buf; record j is
  buf[offsets[j]:offsets[j + 1]]. Returns the bytes written."""
  num_features = len(kinds)
  pos = 0
  for row in range(ints.shape[0]):
    # Example.features' length comes first, so size the entries before writing.
    body = 0
    for f in range(num_features):
      feature = _feature_size(kinds, starts, lengths, ints, floats, row, f)[2]
      entry = _entry_size(key_offsets[f + 1] - key_offsets[f], feature)
      body += 1 + _varint_size(np.uint64(entry)) + entry
    offsets[row] = pos
    buf[pos] = 0x0A  # Example.features
    pos = _put_varint(buf, pos + 1, np.uint64(body))
    for f in range(num_features):
      payload, values, feature = _feature_size(kinds, starts, lengths, ints, floats, row, f)
      key_length = key_offsets[f + 1] - key_offsets[f]
      buf[pos] = 0x0A  # Features.feature: a map entry
      pos = _put_varint(buf, pos + 1, np.uint64(_entry_size(key_length, feature)))
      buf[pos] = 0x0A  # entry.key
      pos = _put_varint(buf, pos + 1, np.uint64(key_length))
      for k in range(key_offsets[f], key_offsets[f + 1]):
        buf[pos] = keys[k]
        pos += 1
      buf[pos] = 0x12  # entry.value: a Feature
      pos = _put_varint(buf, pos + 1, np.uint64(feature))
      buf[pos] = 0x1A if kinds[f] == _INT else 0x12  # Feature.int64_list / float_list
      pos = _put_varint(buf, pos + 1, np.uint64(values))
      if payload:
        buf[pos] = 0x0A  # The list's packed `value` field
        pos = _put_varint(buf, pos + 1, np.uint64(payload))
        if kinds[f] == _INT:
          for k in range(starts[f], starts[f] + lengths[f]):
            pos = _put_varint(buf, pos, np.uint64(ints[row, k]))
        else:
          raw = floats[row, starts[f]:starts[f] + lengths[f]].view(np.uint8)
          for b in raw:
            buf[pos] = b
            pos += 1
  offsets[ints.shape[0]] = pos
  return pos


class ExampleSpec(object):
  """Fixed-shape features of one record format, in serialisation order.

      spec = ExampleSpec([("input_ids", "int64", [128]), ("label_ids", "int64", []),
                          ("weights", "float32", [20])])

  A shape of [] is a scalar (one value in the record). Int columns are laid
  out side by side in one int64 array, float columns in one float32 array,
  one row per record (`int_columns`, `float_columns` give each feature's
  slice); that is what `encode_batch` takes.
  """

  def __init__(self, features):
    self.features = [Feature(name, dtype, tuple(int(d) for d in shape))
                     for name, dtype, shape in features]
    for feature in self.features:
      if feature.dtype not in ("int64", "float32"):
        raise ValueError("Feature %s: dtype must be int64 or float32." % feature.name)
    sizes = [int(np.prod(f.shape)) for f in self.features]
    self._kinds = np.array([_INT if f.dtype == "int64" else _FLOAT for f in self.features],
                           np.int64)
    self._lengths = np.array(sizes, np.int64)
    self._starts = np.zeros(len(self.features), np.int64)
    self.int_columns, self.float_columns = {}, {}
    widths = [0, 0]
    for i, (feature, size) in enumerate(zip(self.features, sizes)):
      kind = self._kinds[i]
      self._starts[i] = widths[kind]
      columns = self.int_columns if kind == _INT else self.float_columns
      columns[feature.name] = slice(widths[kind], widths[kind] + size)
      widths[kind] += size
    self.int_width, self.float_width = widths
    keys = [f.name.encode("utf-8") for f in self.features]
    self._keys = np.frombuffer(b"".join(keys), np.uint8).copy()
    self._key_offsets = np.concatenate([[0], np.cumsum([len(k) for k in keys])]).astype(np.int64)

  def empty_columns(self, count):
    """Zeroed (ints [count, int_width], floats [count, float_width]) to fill."""
    return (np.zeros((count, self.int_width), np.int64),
            np.zeros((count, self.float_width), np.float32))

  def max_record_bytes(self):
    """An upper bound on one record's size (10 bytes a varint)."""
    return int(10 * self.int_width + 4 * self.float_width + len(self._keys) +
               64 * len(self.features) + 16)

  def encode_batch(self, ints, floats=None, buf=None):
    """Serialises rows of (ints, floats) as laid out by `empty_columns`;
    returns (uint8 data, int64 offsets): record j is data[offsets[j]:offsets[j+1]].
    `buf`, if given, is reused for the data when it is large enough."""
    ints = np.ascontiguousarray(ints, np.int64)
    count = ints.shape[0]
    if floats is None:
      floats = np.zeros((count, 0), np.float32)
    floats = np.ascontiguousarray(floats, np.float32)
    if buf is None or len(buf) < count * self.max_record_bytes():
      buf = np.empty(count * self.max_record_bytes(), np.uint8)
    offsets = np.empty(count + 1, np.int64)
    _encode(self._kinds, self._starts, self._lengths, self._keys, self._key_offsets,
            ints, floats, buf, offsets)
    return buf, offsets

  def columns_of(self, rows):
    """(ints, floats) from a list of {name: value or values} dicts."""
    ints, floats = self.empty_columns(len(rows))
    if rows:
      for array, columns_by_name in ((ints, self.int_columns), (floats, self.float_columns)):
        for name, columns in columns_by_name.items():
          values = np.asarray([row[name] for row in rows], array.dtype)
          array[:, columns] = values.reshape(len(rows), -1)
    return ints, floats

  def encode(self, rows):
    """The serialised records (bytes) of a list of {name: values} dicts."""
    data, offsets = self.encode_batch(*self.columns_of(rows))
    return [data[offsets[j]:offsets[j + 1]].tobytes() for j in range(len(rows))]

  def parsing_spec(self):
    """{name: tf.io.FixedLenFeature} for tf.io.parse_single_example."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return {f.name: tf.io.FixedLenFeature(list(f.shape), getattr(tf, f.dtype))
            for f in self.features}

  def decode(self, record):
    """One serialised record -> {name: tensor}, int64 features as int32."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    example = tf.io.parse_single_example(record, self.parsing_spec())
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}


def read_records(input_files, spec, is_training=False, seed=0, input_context=None,
                 shuffle_buffer=100):
  """Decoded feature dicts of record files, in order; with `is_training`
  repeated and shuffled in a buffer of 100 as the original read them, but
  seeded, so that a resumed run sees the same batches. `input_context` (from
  tf.distribute) gives each input pipeline every n-th record."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tfrecord.note_read([input_files] if isinstance(input_files, (str, bytes)) else input_files)
  d = tf.data.TFRecordDataset(input_files)
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training:
    d = d.repeat().shuffle(buffer_size=shuffle_buffer, seed=seed)
  return d.map(spec.decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


# The features that run along the sequence (the last axis); the rest are per
# example (labels) or index into it (masked positions, below the real length).
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")


def trimmed_length(input_mask, multiple):
  """The longest real row of a batch (1s of `input_mask`, over its last
  axis), rounded up to `multiple` and at most the padded length."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=-1))
  rounded = (tf.maximum(longest, 1) + multiple - 1) // multiple * multiple
  return tf.minimum(rounded, tf.shape(input_mask)[-1])


def _length_bucket(features, multiple):
  """The multiple a record's real length rounds up to (int64, for tf.data)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  length = tf.reduce_max(tf.reduce_sum(tf.cast(features["input_mask"], tf.int64), axis=-1))
  return (length + multiple - 1) // multiple


def trim_padding(features, multiple):
  """A batch without the padding columns no row needs: the sequence features
  cut to `trimmed_length`. Real tokens come first in every row and padding
  is masked out of attention, so the model's outputs at the real tokens are
  those of the padded batch."""
  length = trimmed_length(features["input_mask"], multiple)
  return {name: value[..., :length] if name in SEQUENCE_FEATURES else value
          for name, value in features.items()}


def batched(records, batch_size, drop_remainder=False, trim_to_multiple=None,
            group_by_length=False):
  """Batches of `records` (feature dicts), prefetched; with
  `trim_to_multiple`, each cut to its longest row (trim_padding). With
  `group_by_length` (and trim_to_multiple), records of about the same length
  (the same multiple) are batched together as they come: for a repeated,
  shuffled training stream, every batch is full and needs no padding, but
  batches are no longer consecutive records."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if group_by_length and trim_to_multiple:
    d = records.group_by_window(
        key_func=lambda f: _length_bucket(f, trim_to_multiple), window_size=batch_size,
        reduce_func=lambda _, window: window.batch(batch_size, drop_remainder=drop_remainder))
  else:
    d = records.batch(batch_size, drop_remainder=drop_remainder)
  if trim_to_multiple:
    d = d.map(lambda f: trim_padding(f, trim_to_multiple),
              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return d.prefetch(tf.data.AUTOTUNE)


def length_grouped_batches(records, batch_size, multiple, index_name="example_index"):
  """Batches of records of about the same length, each trimmed to it; every
  record gets its position in `records` as the feature `index_name`, so that
  outputs can be put back in order. Records whose lengths round up to the
  same multiple share batches of up to `batch_size`, the rest are flushed
  at the end: no batch carries a column of padding that no row needs."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def with_index(index, features):
    return dict(features, **{index_name: tf.cast(index, tf.int32)})

  d = records.enumerate().map(with_index)
  d = d.group_by_window(key_func=lambda f: _length_bucket(f, multiple), window_size=batch_size,
                        reduce_func=lambda _, window: window.batch(batch_size))
  return d.map(lambda f: trim_padding(f, multiple)).prefetch(tf.data.AUTOTUNE)
