"""No compute on padding: batches cut to their longest row, length-grouped
evaluation, and exports run at the request's length, all giving what the
fixed-length path gives."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import data_file, reference_config
from data_prep.pretraining import dataset as pretraining_dataset
import modeling
from modeling import inference
from modeling import losses
from modeling import training
from plumbing import tf_example

SEQ = 40  # The reference config's max_position_embeddings.
RECORDS = data_file("pretraining_reference/sample_default.tfrecord")


def _features(lengths, seq=SEQ, seed=0):
  """Feature dicts of rows with these real lengths (ids, then zero padding)."""
  rng = np.random.default_rng(seed)
  rows = []
  for i, length in enumerate(lengths):
    ids = np.zeros(seq, np.int32)
    ids[:length] = rng.integers(5, 99, length)
    mask = (np.arange(seq) < length).astype(np.int32)
    segments = ((np.arange(seq) >= length // 2) & (mask > 0)).astype(np.int32)
    rows.append({"input_ids": ids, "input_mask": mask, "segment_ids": segments,
                 "label_ids": np.int32(i % 2), "is_real_example": np.int32(1)})
  return rows


def _dataset(rows):
  return tf.data.Dataset.from_tensor_slices(
      {k: np.stack([r[k] for r in rows]) for k in rows[0]})


def test_a_batch_is_cut_to_its_longest_row_rounded_up():
  batch = {k: tf.constant(np.stack([r[k] for r in _features([3, 10, 5])]))
           for k in ("input_ids", "input_mask", "segment_ids", "label_ids")}
  trimmed = tf_example.trim_padding(batch, 8)
  assert trimmed["input_ids"].shape == (3, 16)
  assert trimmed["label_ids"].shape == (3,)  # Not a sequence feature: untouched.
  np.testing.assert_array_equal(trimmed["input_ids"], batch["input_ids"][:, :16])
  # All padding still keeps one multiple; never longer than the padded rows.
  assert tf_example.trimmed_length(tf.zeros([2, SEQ], tf.int32), 8) == 8
  assert tf_example.trimmed_length(tf.ones([2, 12], tf.int32), 8) == 12
  # Multiple choice [batch, choices, seq]: the longest over every choice.
  choices = tf.constant(np.stack([[r["input_mask"] for r in _features([2, 30, 4, 1])]]))
  assert tf_example.trim_padding({"input_mask": choices}, 8)["input_mask"].shape == (1, 4, 32)


def test_length_groups_hold_every_record_once_in_batches_of_one_length():
  lengths = np.random.default_rng(1).integers(1, SEQ + 1, 50)
  batches = list(tf_example.length_grouped_batches(_dataset(_features(lengths)), 4, 8))
  index = np.concatenate([b["example_index"].numpy() for b in batches])
  assert sorted(index.tolist()) == list(range(50))
  sizes = {}
  for batch in batches:
    width = batch["input_ids"].shape[1]
    real = lengths[batch["example_index"].numpy()]
    assert width % 8 == 0 and width <= SEQ
    assert ((real + 7) // 8 * 8 == width).all()  # Every row needs the width.
    sizes.setdefault(width, []).append(len(real))
  # Up to 4 rows' worth of padded positions (4 * 40): 20 rows of width 8,
  # 10 of 16, 6 of 24, 5 of 32, 4 of 40; only a width's last batch is short.
  for width, counts in sizes.items():
    full = {8: 20, 16: 10, 24: 6, 32: 5, 40: 4}[width]
    assert counts[:-1] == [full] * (len(counts) - 1) and 0 < counts[-1] <= full
    assert sum(counts) == sum((lengths + 7) // 8 * 8 == width)
  assert max(len(c) for c in sizes.values()) > 1  # Some width filled a batch.


@pytest.fixture(scope="module")
def classifier():
  config = reference_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model = modeling.BertClassifier(config, num_labels=2)
  model.classifier.dropout.rate = 0.0
  return model


def test_length_aware_outputs_equal_the_fixed_length_ones(classifier):
  lengths = np.random.default_rng(2).integers(2, SEQ, 23)
  rows = _features(lengths)
  strategy = tf.distribute.get_strategy()
  fixed = inference.classifier_outputs(strategy, classifier, _dataset(rows), 23, 4)
  trimmed = inference.classifier_outputs(strategy, classifier, _dataset(rows), 23, 4,
                                         trim_to_multiple=8)
  assert [len(x) for x in trimmed] == [23, 23, 23]
  for a, b in zip(fixed, trimmed):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_the_model_sees_short_batches_and_traces_once(classifier):
  lengths = list(range(1, 41))  # Forty lengths, five multiples of 8.
  widths, traces = set(), []

  def replica(features):
    traces.append(features["input_ids"].shape)  # Runs once per trace.
    shape = tf.shape(features["input_ids"])
    return classifier(features)["logits"], tf.fill([shape[0]], shape[1])
  batches = tf_example.length_grouped_batches(_dataset(_features(lengths)), 4, 8)
  for _, width in inference.stream_batches(tf.distribute.get_strategy(), replica, batches):
    widths.add(int(width[0]))
  assert widths == {8, 16, 24, 32, 40}
  assert len(traces) == 1 and traces[0][1] is None


def _xla_compiled(concrete_function):
  """Names of the functions `concrete_function` calls that XLA must compile."""
  library = concrete_function.graph.as_graph_def().library
  return [f.signature.name for f in library.function
          if "_XlaMustCompile" in f.attr and f.attr["_XlaMustCompile"].b]


def test_inference_compiles_nothing_per_batch_length(classifier):
  """XLA compiles a function again for every new input shape: inference, in
  batches of many lengths, runs plain ops only; training keeps the fused
  kernels (their backward pass is where they save)."""
  spec = {k: tf.TensorSpec([None, None], tf.int32)
          for k in ("input_ids", "input_mask", "segment_ids")}
  for is_training in (False, True):
    function = tf.function(
        lambda features, t=is_training: classifier(features, training=t)["logits"])
    assert bool(_xla_compiled(function.get_concrete_function(spec))) == is_training


def test_three_training_steps_trimmed_equal_fixed(tmp_path):
  """The training driver on trimmed and on fixed-length batches: the same
  losses and weights (dropout off)."""
  rows = _features(np.random.default_rng(3).integers(2, 30, 12))
  results = []
  for name, multiple in (("fixed", None), ("trimmed", 8)):
    config = reference_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    keras.utils.set_random_seed(5)
    model = modeling.BertClassifier(config, num_labels=2)
    model.classifier.dropout.rate = 0.0
    settings = training.TrainingSettings(output_dir=str(tmp_path / name), num_train_steps=3,
                                         train_batch_size=4, learning_rate=1e-3,
                                         num_warmup_steps=1)
    shapes = []

    def dataset_fn(batch, context, multiple=multiple, shapes=shapes):
      d = tf_example.batched(_dataset(rows).repeat(), batch, drop_remainder=True,
                             trim_to_multiple=multiple)
      shapes.extend(b["input_ids"].shape[1] for b in d.take(3))
      return d
    result = training.train(tf.distribute.get_strategy(), model, losses.ModelLoss(model),
                            dataset_fn, settings)
    results.append((result.loss, [v.numpy() for v in model.trainable_variables]))
    assert (max(shapes) < SEQ) == (multiple is not None)
  (fixed_loss, fixed_weights), (trimmed_loss, trimmed_weights) = results
  assert abs(fixed_loss - trimmed_loss) <= 1e-5
  for a, b in zip(fixed_weights, trimmed_weights):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("objective", ["mlm_nsp", "ltr"])
def test_pretraining_batches_trimmed_give_the_same_loss(objective):
  config = modeling.BertConfig.from_dict(dict(  # The records' uncased vocabulary.
      vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
      intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
      attention_probs_dropout_prob=0.0, causal_attention=objective == "ltr"))
  model = modeling.BertPretrainer(config, next_sentence=objective == "mlm_nsp")
  loss_fn = losses.ModelLoss(model)
  values = []
  for multiple in (None, 8):
    batch = next(iter(pretraining_dataset.pretraining_dataset(  # Lengths 80, 101, 62.
        [RECORDS], 128, 20, 3, is_training=False, objective=objective,
        trim_to_multiple=multiple)))
    assert (batch["input_ids"].shape[1] < 128) == (multiple is not None)
    values.append(float(loss_fn(model, batch, loss_fn.totals(batch))))
  assert values[0] == pytest.approx(values[1], abs=1e-5)


def test_training_batches_grouped_by_length_are_full_and_of_one_length():
  lengths = np.random.default_rng(4).integers(1, SEQ + 1, 30)

  def batches():  # A new pipeline each time, as a resumed run builds it.
    stream = _dataset(_features(lengths)).repeat().shuffle(30, seed=1)
    return list(tf_example.batched(stream, 4, drop_remainder=True, trim_to_multiple=8,
                                   group_by_length=True).take(20))
  first = batches()
  for batch in first:
    real = batch["input_mask"].numpy().sum(1)
    assert batch["input_ids"].shape[0] == 4
    assert ((real + 7) // 8 * 8 == batch["input_ids"].shape[1]).all()
  assert all(np.array_equal(a["input_ids"], b["input_ids"]) for a, b in zip(first, batches()))
