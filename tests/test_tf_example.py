"""The Example encoder (plumbing/tf_example.py), in both its forms (NumPy and
compiled), against protobuf itself, for every record format the project
writes."""

import copy

import numpy as np
import pytest
import tensorflow as tf

from data_prep.pretraining import records as pretraining_records
from modeling import heads
from plumbing import tf_example
from tasks import swag
from tasks.classification import features as classifier_features
from tasks.squad import features as squad_features

SPECS = {
    "pretraining": pretraining_records.example_spec(16, 4),
    "classifier": classifier_features.example_spec(12),
    "regression": classifier_features.example_spec(12, heads.REGRESSION),
    "swag": swag.example_spec(6),
    "squad_train": squad_features.example_spec(10, is_training=True),
    "squad_predict": squad_features.example_spec(10, is_training=False),
}
# Written as TensorFlow's protos with deterministic=True would write them.
CANONICAL = ("classifier", "regression", "swag", "squad_train", "squad_predict")


def _random_rows(spec, count, rng):
  rows = []
  for _ in range(count):
    row = {}
    for feature in spec.features:
      shape = feature.shape
      if feature.dtype == "float32":
        row[feature.name] = rng.standard_normal(shape).astype(np.float32)
      else:  # Small ids, large ids and negative values (ten-byte varints).
        row[feature.name] = rng.choice([0, 1, 127, 128, 30521, 2**31 - 1, 2**40, -1, -5000],
                                       size=shape)
    rows.append(row)
  return rows


def _protobuf(spec, row):
  example = tf.train.Example()
  for feature in spec.features:  # Map entries in the spec's order.
    values = np.ravel(row[feature.name]).tolist()
    entry = example.features.feature[feature.name]
    if feature.dtype == "float32":
      entry.float_list.value.extend(values)
    else:
      entry.int64_list.value.extend(values)
  return example


def _encoding_with(spec, encoder):
  """A copy of `spec` that encodes with `encoder` ("numpy" or "compiled")."""
  spec = copy.copy(spec)
  spec.compile_after_rows = 0 if encoder == "compiled" else 10**9
  return spec


@pytest.mark.parametrize("encoder", ["numpy", "compiled"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_records_are_what_protobuf_writes(name, encoder):
  spec = _encoding_with(SPECS[name], encoder)
  rows = _random_rows(spec, 20, np.random.default_rng(len(name)))
  records = spec.encode(rows)
  assert len(records) == len(rows) == 20
  for record, row in zip(records, rows):
    expected = _protobuf(spec, row)
    assert tf.train.Example.FromString(record) == expected
    assert len(record) == expected.ByteSize()  # Minimal: no extra bytes.
    if name in CANONICAL:
      assert record == expected.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_decode_gives_int32_and_the_shapes(name):
  spec = SPECS[name]
  row = _random_rows(spec, 1, np.random.default_rng(7))[0]
  decoded = spec.decode(spec.encode([row])[0])
  assert sorted(decoded) == sorted(f.name for f in spec.features)
  for feature in spec.features:
    value = decoded[feature.name].numpy()
    assert value.shape == feature.shape
    want = np.asarray(row[feature.name])
    if feature.dtype == "float32":
      np.testing.assert_array_equal(value, want.astype(np.float32))
    else:
      assert value.dtype == np.int32
      np.testing.assert_array_equal(value, want.astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("encoder", ["numpy", "compiled"])
def test_batches_of_many_records_equal_one_at_a_time(encoder):
  spec = _encoding_with(SPECS["pretraining"], encoder)
  rows = _random_rows(spec, 300, np.random.default_rng(3))
  data, offsets = spec.encode_batch(*spec.columns_of(rows))
  one_by_one = [spec.encode([row])[0] for row in rows]
  assert [data[offsets[j]:offsets[j + 1]].tobytes() for j in range(300)] == one_by_one


def test_the_compiled_encoder_starts_past_compile_after_rows(monkeypatch):
  """Small work stays with NumPy (nothing to load); from compile_after_rows
  rows on, the compiled encoder writes the same bytes."""
  from plumbing import compiled_tf_example
  calls = []
  encode = compiled_tf_example.encode
  monkeypatch.setattr(compiled_tf_example, "encode",
                      lambda *args: calls.append(len(args[5])) or encode(*args))
  spec = classifier_features.example_spec(12)
  spec.compile_after_rows = 6
  rows = _random_rows(spec, 3, np.random.default_rng(5))
  written = [spec.encode(rows) for _ in range(3)]
  assert calls == [3]  # Rows 1-3 and 4-6 by NumPy, 7-9 compiled.
  assert written[0] == written[1] == written[2]


def _numbered_records(path, count):
  """`count` classifier records whose label_ids are 0, 1, ... in file order."""
  spec = classifier_features.example_spec(4)
  with tf.io.TFRecordWriter(path) as writer:
    for n in range(count):
      row = {f.name: np.zeros(f.shape, np.int64) for f in spec.features}
      row["label_ids"] = np.array([n])
      writer.write(_protobuf(spec, row).SerializeToString())
  return spec


@pytest.mark.parametrize("buffer", [100, 0])
def test_training_shuffle_buffer(tmp_path, buffer):
  """The original's buffer of 100 can only hand out, as the k-th record,
  one of the first 100 + k; 0 shuffles the whole file, each pass anew."""
  from plumbing import tfrecord  # pylint: disable=g-import-not-at-top
  path = str(tmp_path / "train.tf_record")
  spec = _numbered_records(path, 1000)
  assert tfrecord.records_in(path) == 1000
  order = [int(r["label_ids"]) for r in tf_example.read_records(
      path, spec, is_training=True, seed=3, shuffle_buffer=buffer).take(2000)]
  assert len(order) == 2000
  if buffer:
    assert all(n < 100 + k for k, n in enumerate(order))
  else:
    assert sum(n >= 500 for n in order[:100]) > 30  # About half of them.
    # Each pass is a permutation, and the second differs from the first.
    assert sorted(order[:1000]) == sorted(order[1000:]) == list(range(1000))
    assert order[:1000] != order[1000:]
