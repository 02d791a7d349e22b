"""`tf.train.Example` records: the project's one encoder, decoder and reader.

The records the model reads (pre-training instances, each fine-tuning task's
features) are Examples of fixed-shape int64 and float features.
`ExampleSpec` names them once, in the order they are serialised, and serves
both directions:
  * writing: `encode_batch` serialises thousands of records per call with its
    own encoder of the protobuf wire format (no TensorFlow, no protobuf
    objects: building protos one by one cost the original most of its data
    generation time), in NumPy, and compiled by numba once a spec has
    encoded `compile_after_rows` rows (plumbing/compiled_tf_example.py).
    The bytes are what protobuf writes for the same entries in the same
    order (tests/test_tf_example.py);
  * reading: `parsing_spec` and `decode` for tf.data, `read_records`, the
    one tf.data reader of a task's record file (int64 features come back as
    int32, as TPUs want), and `batched`.
(extract_features' optional TFRecord output is not model input: it holds
strings and per-line shapes, and is written with TensorFlow's own protos.)
"""

import collections

import numpy as np

from plumbing import tfrecord

Feature = collections.namedtuple("Feature", ["name", "dtype", "shape"])

_INT, _FLOAT = 0, 1


def _varint_sizes(values):
  """Bytes of each uint64 value's varint (int8)."""
  sizes = np.ones(values.shape, np.int8)
  top, bits = int(values.max(initial=0)), 7
  while bits < 64 and top >> bits:
    sizes += values >= np.uint64(1 << bits)
    bits += 7
  return sizes


def _varints(values):
  """(bytes [..., w], mask [..., w] or None for all, sizes) of the varints of
  uint64 `values`, w the longest one's size."""
  sizes = _varint_sizes(values)
  width = int(sizes.max(initial=1))
  if width == 1:
    return values.astype(np.uint8)[..., None], None, sizes
  narrow = values.astype(np.uint32) if width <= 4 else values
  out = np.empty(values.shape + (width,), np.uint8)
  for k in range(width):
    out[..., k] = ((narrow >> (7 * k)) & 0x7F) | ((sizes > k + 1).astype(narrow.dtype) << 7)
  return out, np.arange(width, dtype=np.int8) < sizes[..., None], sizes


def _varint_bytes(value):
  out = bytearray()
  while value >= 128:
    out.append((value & 127) | 128)
    value >>= 7
  return bytes(out + bytes([value]))


def _encode_with_numpy(spec, ints, floats):
  """encode_batch's records, built column-wise: every row's pieces (tags,
  lengths, keys, values) laid side by side, padded to a common width, then
  read out through a mask of the bytes each row really has."""
  n, count = ints.shape[0], len(spec.features)
  pieces, payloads = [], []
  for f, feature in enumerate(spec.features):
    if spec._kinds[f] == _INT:
      values = ints[:, spec.int_columns[feature.name]].view(np.uint64)
      data, mask, sizes = _varints(values)
      pieces.append((data.reshape(n, -1), None if mask is None else mask.reshape(n, -1)))
      payloads.append(sizes.sum(axis=1, dtype=np.int64))
    else:
      raw = np.ascontiguousarray(floats[:, spec.float_columns[feature.name]]).view(np.uint8)
      pieces.append((raw.reshape(n, -1), None))
      payloads.append(np.full(n, raw.shape[1], np.int64))
  # The lengths each message is prefixed with, innermost first ([n, count]).
  payload = np.stack(payloads, 1)
  has_payload = payload > 0
  values = np.where(has_payload, 1 + _varint_sizes(payload.view(np.uint64)) + payload, 0)
  feature = 1 + _varint_sizes(values.view(np.uint64)) + values
  key_parts = np.array([len(_varint_bytes(len(k))) + len(k) for k in spec._key_bytes])
  entry = 1 + key_parts + 1 + _varint_sizes(feature.view(np.uint64)) + feature
  body = (1 + _varint_sizes(entry.view(np.uint64)) + entry).sum(axis=1)
  lengths, length_mask, _ = _varints(
      np.concatenate([body[:, None], entry, feature, values, payload], 1).view(np.uint64))

  def length(j, present=None):
    mask = None if length_mask is None else length_mask[:, j]
    if present is not None:
      mask = present[:, None] if mask is None else mask & present[:, None]
    return lengths[:, j], mask

  def constant(data):
    return np.broadcast_to(np.frombuffer(data, np.uint8), (n, len(data))), None

  row = [constant(b"\x0a"), length(0)]  # Example.features
  for f, key in enumerate(spec._key_bytes):
    row += [constant(b"\x0a"), length(1 + f),  # a Features.feature map entry
            constant(b"\x0a" + _varint_bytes(len(key)) + key + b"\x12"),  # key; value:
            length(1 + count + f),
            constant(b"\x1a" if spec._kinds[f] == _INT else b"\x12"),  # int64/float list
            length(1 + 2 * count + f)]
    if spec._lengths[f]:  # The list's packed values.
      row += [(constant(b"\x0a")[0], has_payload[:, f:f + 1]),
              length(1 + 3 * count + f, has_payload[:, f]), pieces[f]]
  data = np.concatenate([d for d, _ in row], axis=1)
  mask = np.concatenate([np.ones(d.shape, bool) if m is None else m for d, m in row], axis=1)
  offsets = np.zeros(n + 1, np.int64)
  np.cumsum(mask.sum(axis=1), out=offsets[1:])
  return data[mask], offsets


class ExampleSpec(object):
  """Fixed-shape features of one record format, in serialisation order.

      spec = ExampleSpec([("input_ids", "int64", [128]), ("label_ids", "int64", []),
                          ("weights", "float32", [20])])

  A shape of [] is a scalar (one value in the record). Int columns are laid
  out side by side in one int64 array, float columns in one float32 array,
  one row per record (`int_columns`, `float_columns` give each feature's
  slice); that is what `encode_batch` takes.

  `compile_after_rows`: below this many rows encoded, the NumPy encoder
  (nothing to load); from it on, the compiled one (faster per record, once
  numba is imported and its code loaded, which costs more than a dev set's
  records take). A task's dev set stays below; the pre-training data
  generator sets 0.
  """

  compile_after_rows = 100_000

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
    keys = self._key_bytes = [f.name.encode("utf-8") for f in self.features]
    self._keys = np.frombuffer(b"".join(keys), np.uint8).copy()
    self._rows_encoded = 0
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
    `buf`, if given, is reused by the compiled encoder when it is large enough."""
    ints = np.ascontiguousarray(ints, np.int64)
    count = ints.shape[0]
    if floats is None:
      floats = np.zeros((count, 0), np.float32)
    floats = np.ascontiguousarray(floats, np.float32)
    self._rows_encoded += count
    if self._rows_encoded <= self.compile_after_rows:
      return _encode_with_numpy(self, ints, floats)
    from plumbing import compiled_tf_example  # pylint: disable=g-import-not-at-top
    if buf is None or len(buf) < count * self.max_record_bytes():
      buf = np.empty(count * self.max_record_bytes(), np.uint8)
    offsets = np.empty(count + 1, np.int64)
    compiled_tf_example.encode(self._kinds, self._starts, self._lengths, self._keys,
                               self._key_offsets, ints, floats, buf, offsets)
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


def without_autograph(function):
  """`function` for tf.data to trace as it is: tf.data runs map and grouping
  functions through autograph unless told not to, and autograph's first
  conversion in a process is a noticeable share of a small evaluation
  command's work. None of ours branches or loops on tensors in Python."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.autograph.experimental.do_not_convert(function)


def read_records(input_files, spec, is_training=False, seed=0, input_context=None,
                 shuffle_buffer=100):
  """Decoded feature dicts of record files, in order; with `is_training`
  repeated and shuffled in a buffer of `shuffle_buffer` (100: as the
  original read them; 0: each pass a new order of all records, as Hugging
  Face's Trainer shuffles), seeded, so that a resumed run sees the same
  batches. `input_context` (from
  tf.distribute) gives each input pipeline every n-th record."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tfrecord.note_read([input_files] if isinstance(input_files, (str, bytes)) else input_files)
  d = tf.data.TFRecordDataset(input_files)
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training and not shuffle_buffer:
    paths = [input_files] if isinstance(input_files, (str, bytes)) else input_files
    count = sum(tfrecord.records_in(p) for p in paths)
    d = d.shuffle(buffer_size=max(count, 1), seed=seed, reshuffle_each_iteration=True).repeat()
  elif is_training:
    d = d.repeat().shuffle(buffer_size=shuffle_buffer, seed=seed)
  return d.map(without_autograph(spec.decode), num_parallel_calls=tf.data.AUTOTUNE,
               deterministic=True)


# The model's inputs, which run along the sequence (the last axis). Other
# features are per example (labels) or index into it (masked positions, below
# the real length), but for those a task says run along it too (a tagger's
# labels): `along_sequence` below.
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")


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


def trim_padding(features, multiple, along_sequence=()):
  """A batch without the padding columns no row needs: the model's inputs
  (and the features named in `along_sequence`) cut to `trimmed_length`. Real
  tokens come first in every row and padding is masked out of attention, so
  the model's outputs at the real tokens are those of the padded batch."""
  length = trimmed_length(features["input_mask"], multiple)
  trimmed = MODEL_INPUTS + tuple(along_sequence)
  return {name: value[..., :length] if name in trimmed else value
          for name, value in features.items()}


def batched(records, batch_size, drop_remainder=False, trim_to_multiple=None,
            group_by_length=False, along_sequence=()):
  """Batches of `records` (feature dicts), prefetched; with
  `trim_to_multiple`, each cut to its longest row (trim_padding). With
  `group_by_length` (and trim_to_multiple), records of about the same length
  (the same multiple) are batched together as they come: for a repeated,
  shuffled training stream, every batch is full and needs no padding, but
  batches are no longer consecutive records."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if group_by_length and trim_to_multiple:
    d = records.group_by_window(
        key_func=without_autograph(lambda f: _length_bucket(f, trim_to_multiple)),
        window_size=batch_size,
        reduce_func=without_autograph(
            lambda _, window: window.batch(batch_size, drop_remainder=drop_remainder)))
  else:
    d = records.batch(batch_size, drop_remainder=drop_remainder)
  if trim_to_multiple:
    d = d.map(without_autograph(lambda f: trim_padding(f, trim_to_multiple, along_sequence)),
              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return d.prefetch(tf.data.AUTOTUNE)


def length_grouped_batches(records, batch_size, multiple, index_name="example_index"):
  """Batches of records of about the same length, each trimmed to it; every
  record gets its position in `records` as the feature `index_name`, so that
  outputs can be put back in order. Records whose lengths round up to the
  same multiple share a batch, the rest are flushed at the end: no batch
  carries a column of padding that no row needs.

  `batch_size` counts rows at the padded length: a batch of shorter rows
  holds more of them, up to the same number of token positions (a batch of
  16-token rows from 128-token records holds 8x the rows). Its activations
  take no more memory than a padded batch's, and the larger products run
  faster per row."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def with_index(index, features):
    return dict(features, **{index_name: tf.cast(index, tf.int32)})

  padded = records.element_spec["input_mask"].shape[-1] or multiple  # Unknown: no more rows.

  def rows_per_batch(bucket):
    width = tf.maximum(bucket, 1) * multiple
    return tf.maximum(tf.constant(batch_size, tf.int64), batch_size * padded // width)

  d = records.enumerate().map(without_autograph(with_index))
  d = d.group_by_window(
      key_func=without_autograph(lambda f: _length_bucket(f, multiple)),
      window_size_func=without_autograph(rows_per_batch),
      reduce_func=without_autograph(lambda _, window: window.batch(batch_size * padded)))
  return d.map(without_autograph(lambda f: trim_padding(f, multiple))).prefetch(
      tf.data.AUTOTUNE)
