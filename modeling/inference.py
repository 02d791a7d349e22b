"""Running a model over a whole dataset in fixed-size batches, under any strategy."""

import numpy as np
import tensorflow as tf


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
