"""extract_features.py's input and outputs: text lines in, vectors out.

Input: one text per line, or a pair written `A ||| B` (split at the last
" ||| ", as the original's greedy pattern does; with pairs=False, as embed.py
reads lines, every line is one text). Every line is checked before the model
runs, so a bad line stops the job at once with its number. The lines are
then streamed through the model (`vectors_by_line`), so memory stays at a
batch whatever the file's size.

Outputs (each written under a temporary name, renamed when complete):
  * `json`: the original's JSON lines, one per input line:
    {"linex_index": i, "features": [{"token": t, "layers": [{"index": l,
    "values": [...]}]}]}, values rounded to 6 decimals as the original;
  * `npz`: the float32 numbers themselves; `linex_index` [lines], `layers`
    [L], `values` [tokens of all lines, L, hidden] with `num_tokens` [lines]
    and `tokens` [tokens of all lines], streamed to disk so memory stays
    bounded;
  * `tfrecord`: one tf.train.Example per line with `linex_index`, `tokens`,
    `layers`, `values` (float list, row-major) and `shape`.
With pooling (`cls`, `mean` or `max`: modeling.pooling.pooled) each line
has one vector per layer instead of one per token: JSON lines {"linex_index", "pooling", "layers"}, npz `values`
[lines, L, hidden], TFRecord `values` of shape [L, hidden].
"""

import collections
import itertools
import json
import os
import re
import tempfile
import zipfile

from absl import logging
import numpy as np

from modeling import inference
from modeling import pooling
from plumbing.errors import UserError
from plumbing import files
from plumbing import tf_example
from plumbing import tfrecord
from tasks import pair_packing

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")
OUTPUT_FORMATS = ("json", "npz", "tfrecord")
POOLINGS = ("none",) + pooling.POOLINGS


class InputExample(object):

  def __init__(self, unique_id, text_a, text_b):
    self.unique_id = unique_id
    self.text_a = text_a
    self.text_b = text_b


class InputFeatures(object):

  def __init__(self, unique_id, tokens, input_ids, input_mask, input_type_ids):
    self.unique_id = unique_id
    self.tokens = tokens
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.input_type_ids = input_type_ids


def _lines(input_file):
  """(line number, raw bytes without the newline) of each line."""
  with files.open_binary(input_file) as f:
    for number, raw in enumerate(f, start=1):
      yield number, raw[:-1] if raw.endswith(b"\n") else raw


def _example(input_file, number, raw, pairs=True):
  try:
    line = raw.decode("utf-8")
  except UnicodeDecodeError as e:
    raise UserError("%s:%d: not UTF-8 (byte %d of the line); convert the file to "
                    "UTF-8." % (input_file, number, e.start + 1)) from None
  line = line.strip()  # An empty line is an empty text: [CLS] [SEP], as the original.
  match = _PAIR.match(line) if pairs else None
  if match is None:
    return InputExample(number - 1, line, None)
  return InputExample(number - 1, match.group(1), match.group(2))


def check_input(input_file, pairs=True):
  """The number of lines, after checking that every one is UTF-8. An empty
  line is kept, as the original keeps it (its features are [CLS] [SEP], so
  output lines stay aligned with input lines), with a warning."""
  count = 0
  for number, raw in _lines(input_file):
    if not _example(input_file, number, raw, pairs).text_a:
      logging.warning("%s:%d: empty line: its features are those of [CLS] [SEP].",
                      input_file, number)
    count = number
  if not count:
    raise UserError("%s is empty." % input_file)
  return count


def read_examples(input_file, pairs=True):
  """InputExamples, one per line, streamed; unique_id is the line index.
  pairs=False: every line is one text, whatever it holds."""
  for number, raw in _lines(input_file):
    yield _example(input_file, number, raw, pairs)


def convert_examples(examples, seq_length, tokenizer, chunk=1024):
  """InputFeatures of each example, in order, packed as the classifier packs
  text (pair_packing.pack_batch) `chunk` lines at a time; the
  tokens are the strings of their ids."""
  examples = iter(examples)
  while True:
    batch = list(itertools.islice(examples, chunk))
    if not batch:
      return
    ids, mask, type_ids = pair_packing.pack_batch(
        tokenizer, [e.text_a for e in batch], [e.text_b for e in batch], seq_length)
    for example, row_ids, row_mask, row_types in zip(batch, ids.tolist(), mask.tolist(),
                                                      type_ids.tolist()):
      tokens = tokenizer.convert_ids_to_tokens(row_ids[:sum(row_mask)])
      yield InputFeatures(example.unique_id, tokens, row_ids, row_mask, row_types)


def vectors_by_line(strategy, replica_fn, input_file, num_lines, tokenizer, seq_length,
                    batch_size, trim_to_multiple=None, pairs=True):
  """(InputFeatures, vectors) of each line of `input_file` (num_lines of
  them, check_input's count), in order: replica_fn(features) -> a tensor of
  one row per example, run over global batches of `batch_size` (the last
  filled with rows of zeros, which are dropped), each cut to its longest
  row with `trim_to_multiple`. Streamed: a batch at a time in memory."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  pending = collections.deque()  # Each line's feature, until its vectors come.
  names = ("input_ids", "input_mask", "segment_ids")

  def stream():
    for feature in convert_examples(read_examples(input_file, pairs), seq_length, tokenizer):
      pending.append(feature)
      yield dict(zip(names, (feature.input_ids, feature.input_mask, feature.input_type_ids)))
    for _ in range(-num_lines % batch_size):
      yield {name: [0] * seq_length for name in names}

  spec = tf.TensorSpec([seq_length], tf.int32)
  dataset = tf.data.Dataset.from_generator(stream, output_signature={n: spec for n in names})
  dataset = tf_example.batched(dataset, batch_size, drop_remainder=True,
                               trim_to_multiple=trim_to_multiple)
  done = 0
  for (vectors,) in inference.stream_batches(strategy, lambda f: (replica_fn(f),), dataset):
    for row in vectors[:num_lines - done]:
      done += 1
      yield pending.popleft(), row


# ----------------------------------------------------------------------------
# Writers: write(feature, vectors) with vectors [L, tokens, hidden] (or
# [L, hidden] when pooled) float32; close() renames into place, abort()
# removes the temporary file.

class JsonLinesWriter(object):
  """The original's output format (or the pooled variant)."""

  def __init__(self, path, layer_indexes, pooling="none"):
    self._file = files.AtomicFile(path)
    self._out = self._file.file
    self._layers = layer_indexes
    self._pooling = pooling

  def _layer_values(self, vectors):
    entries = []
    for index, values in zip(self._layers, vectors):
      entry = collections.OrderedDict()
      entry["index"] = index
      entry["values"] = [round(x, 6) for x in values.tolist()]
      entries.append(entry)
    return entries

  def write(self, feature, vectors):
    line = collections.OrderedDict()
    line["linex_index"] = feature.unique_id
    if self._pooling != "none":
      line["pooling"] = self._pooling
      line["layers"] = self._layer_values(vectors)
    else:
      tokens = []
      for i, token in enumerate(feature.tokens):
        entry = collections.OrderedDict()
        entry["token"] = token
        entry["layers"] = self._layer_values(vectors[:, i])
        tokens.append(entry)
      line["features"] = tokens
    self._out.write(json.dumps(line) + "\n")

  def close(self):
    self._file.commit()

  def abort(self):
    self._file.abort()


class TfRecordWriter(object):
  """One tf.train.Example per line, through the atomic plumbing.tfrecord writer."""

  def __init__(self, path, layer_indexes, pooling="none"):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._tf = tf
    self._writer = tfrecord.RecordFileWriter(path)
    self._layers = list(layer_indexes)
    self._pooling = pooling

  def write(self, feature, vectors):
    tf = self._tf
    values = vectors if self._pooling != "none" else np.transpose(vectors, (1, 0, 2))
    example = tf.train.Example(features=tf.train.Features(feature={
        "linex_index": tf.train.Feature(int64_list=tf.train.Int64List(
            value=[feature.unique_id])),
        "tokens": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[t.encode("utf-8") for t in feature.tokens])),
        "layers": tf.train.Feature(int64_list=tf.train.Int64List(value=self._layers)),
        "values": tf.train.Feature(float_list=tf.train.FloatList(
            value=values.reshape(-1))),
        "shape": tf.train.Feature(int64_list=tf.train.Int64List(value=values.shape)),
    }))
    self._writer.write_records([example.SerializeToString()])

  def close(self):
    self._writer.commit()

  def abort(self):
    self._writer.abort()


class NpzWriter(object):
  """Arrays streamed to scratch files, zipped into one .npz at the end (the
  shapes are known only then); memory stays at one batch."""

  def __init__(self, path, layer_indexes, pooling="none"):
    self._file = files.AtomicFile(path, "wb")
    self._scratch = tempfile.mkdtemp(prefix=".npz-", dir=os.path.dirname(
        os.path.abspath(path)))
    self._values = open(os.path.join(self._scratch, "values"), "wb")
    self._tokens = open(os.path.join(self._scratch, "tokens"), "w", encoding="utf-8")
    self._layers = np.array(layer_indexes, np.int32)
    self._pooling = pooling
    self._ids, self._num_tokens = [], []
    self._vector_shape = None
    self._longest_token = 1

  def write(self, feature, vectors):
    values = vectors if self._pooling != "none" else np.transpose(vectors, (1, 0, 2))
    self._vector_shape = values.shape[-2:]
    self._values.write(np.ascontiguousarray(values, np.float32).tobytes())
    self._ids.append(feature.unique_id)
    if self._pooling == "none":
      self._num_tokens.append(len(feature.tokens))
      for token in feature.tokens:
        self._tokens.write(token.replace("\n", " ") + "\n")
        self._longest_token = max(self._longest_token, len(token))

  def _member(self, archive, name, dtype, shape, chunks):
    with archive.open(name + ".npy", "w", force_zip64=True) as member:
      np.lib.format.write_array_header_1_0(member, {
          "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
          "fortran_order": False, "shape": tuple(shape)})
      for chunk in chunks:
        member.write(np.ascontiguousarray(chunk, dtype).tobytes())

  def _token_chunks(self, dtype):
    with open(os.path.join(self._scratch, "tokens"), encoding="utf-8") as f:
      chunk = []
      for line in f:
        chunk.append(line[:-1])
        if len(chunk) == 65536:
          yield np.array(chunk, dtype)
          chunk = []
      if chunk:
        yield np.array(chunk, dtype)

  def _value_chunks(self):
    with open(os.path.join(self._scratch, "values"), "rb") as f:
      while True:
        block = f.read(1 << 24)
        if not block:
          return
        yield np.frombuffer(block, np.float32)

  def close(self):
    self._values.close()
    self._tokens.close()
    rows = sum(self._num_tokens) if self._pooling == "none" else len(self._ids)
    shape = (rows,) + tuple(self._vector_shape or (len(self._layers), 0))
    with zipfile.ZipFile(self._file.file, "w", allowZip64=True) as archive:
      self._member(archive, "linex_index", np.int64, [len(self._ids)], [self._ids])
      self._member(archive, "layers", np.int32, self._layers.shape, [self._layers])
      self._member(archive, "values", np.float32, shape, self._value_chunks())
      if self._pooling == "none":
        self._member(archive, "num_tokens", np.int32, [len(self._ids)], [self._num_tokens])
        dtype = "<U%d" % self._longest_token
        self._member(archive, "tokens", dtype, [rows], self._token_chunks(dtype))
    self._remove_scratch()
    self._file.commit()

  def _remove_scratch(self):
    for name in ("values", "tokens"):
      path = os.path.join(self._scratch, name)
      if os.path.exists(path):
        os.remove(path)
    os.rmdir(self._scratch)

  def abort(self):
    self._values.close()
    self._tokens.close()
    self._remove_scratch()
    self._file.abort()


WRITERS = {"json": JsonLinesWriter, "npz": NpzWriter, "tfrecord": TfRecordWriter}
