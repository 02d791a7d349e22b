"""Running a model over a whole dataset in fixed-size batches, under any strategy:
what evaluation, prediction and feature extraction share."""

from absl import logging
import numpy as np
import tensorflow as tf

from modeling import heads


def padded_batches(dataset, num_examples, batch_size):
  """Batches of exactly `batch_size`: the last is filled with padding
  examples (every feature zero, so is_real_example is 0), as the original
  did on TPUs; compiled steps then see one shape."""
  padding = -num_examples % batch_size
  if padding:
    zeros = dataset.take(1).map(
        lambda f: {k: tf.zeros_like(v) for k, v in f.items()}).repeat(padding)
    dataset = dataset.concatenate(zeros)
  return dataset.batch(batch_size, drop_remainder=True)


def stream_batches(strategy, replica_fn, dataset):
  """replica_fn(features) -> tuple of per-example tensors; yields, for each
  global batch of `dataset` in order, a tuple of numpy arrays (one step
  function, traced once)."""
  distributed = strategy.experimental_distribute_dataset(dataset)

  @tf.function
  def step(features):
    return strategy.run(replica_fn, args=(features,))

  for features in distributed:
    outputs = step(features)
    yield tuple(np.concatenate([p.numpy() for p in strategy.experimental_local_results(v)])
                for v in outputs)


def run_batches(strategy, replica_fn, dataset):
  """Like stream_batches, but every batch's outputs concatenated: one numpy
  array per output, in input order."""
  results = None
  for outputs in stream_batches(strategy, replica_fn, dataset):
    if results is None:
      results = [[] for _ in outputs]
    for i, value in enumerate(outputs):
      results[i].append(value)
  return tuple(np.concatenate(r) for r in results) if results else ()


def layer_vectors(model, features, layer_indexes, pooling="none"):
  """The encoder layers `layer_indexes` (Python indexing: -1 is the last) of
  a BertModel, float32 [batch, L, seq, hidden]; pooled to [batch, L, hidden]
  by the [CLS] vector ("cls") or the mean over the real tokens ("mean")."""
  layers = model(features, training=False)["encoder_outputs"]
  vectors = tf.cast(tf.stack([layers[i] for i in layer_indexes], axis=1), tf.float32)
  if pooling == "cls":
    return vectors[:, :, 0, :]
  if pooling == "mean":
    mask = tf.cast(features["input_mask"], tf.float32)[:, None, :, None]
    return tf.reduce_sum(vectors * mask, axis=2) / tf.maximum(
        tf.reduce_sum(mask, axis=2), 1.0)
  return vectors


def classifier_outputs(strategy, model, records, num_examples, batch_size,
                       is_regression=False):
  """A classifier (or multiple-choice model) over `records` in full batches of
  `batch_size` (the last one padded, as the original did on TPUs): numpy
  logits (scores, for regression), per-example loss and is_real_example, in
  input order."""
  padding = -num_examples % batch_size
  logging.info("  Num examples = %d (%d actual, %d padding)", num_examples + padding,
               num_examples, padding)
  logging.info("  Batch size = %d", batch_size)

  def replica(features):
    logits = model(features, training=False)["logits"]
    if is_regression:
      _, per_example = heads.regression_loss(logits, features["label_ids"])
      logits = tf.reshape(logits, [-1])
    else:
      _, per_example = heads.classification_loss(logits, features["label_ids"])
    return logits, per_example, features["is_real_example"]
  return run_batches(strategy, replica, padded_batches(records, num_examples, batch_size))


def span_logits(strategy, model, dataset):
  """unique_ids, start_logits, end_logits (numpy, input order) of a span model
  over `dataset` (global batches; padding features have id 0)."""
  def replica(features):
    outputs = model(features, training=False)
    return (features["unique_ids"], tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32))
  return run_batches(strategy, replica, dataset)
