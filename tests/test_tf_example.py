"""The one Example encoder (plumbing/tf_example.py) against protobuf itself,
for every record format the project writes."""

import numpy as np
import pytest
import tensorflow as tf

from data_prep.pretraining import records as pretraining_records
from plumbing import tf_example
from tasks import swag
from tasks.classification import features as classifier_features
from tasks.squad import features as squad_features

SPECS = {
    "pretraining": pretraining_records.example_spec(16, 4),
    "classifier": classifier_features.example_spec(12),
    "regression": classifier_features.example_spec(12, is_regression=True),
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


@pytest.mark.parametrize("name", sorted(SPECS))
def test_records_are_what_protobuf_writes(name):
  spec = SPECS[name]
  rows = _random_rows(spec, 20, np.random.default_rng(len(name)))
  for record, row in zip(spec.encode(rows), rows):
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


def test_batches_of_many_records_equal_one_at_a_time():
  spec = SPECS["pretraining"]
  rows = _random_rows(spec, 300, np.random.default_rng(3))
  data, offsets = spec.encode_batch(*spec.columns_of(rows))
  one_by_one = [spec.encode([row])[0] for row in rows]
  assert [data[offsets[j]:offsets[j + 1]].tobytes() for j in range(300)] == one_by_one
