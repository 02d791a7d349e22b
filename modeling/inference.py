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


def run_batches(strategy, replica_fn, dataset):
  """replica_fn(features) -> tuple of per-example tensors, over every global
  batch of `dataset`; returns one numpy array per output, in input order."""
  distributed = strategy.experimental_distribute_dataset(dataset)

  @tf.function
  def step(features):
    return strategy.run(replica_fn, args=(features,))

  results = None
  for features in distributed:
    outputs = step(features)
    if results is None:
      results = [[] for _ in outputs]
    for i, value in enumerate(outputs):
      parts = strategy.experimental_local_results(value)
      results[i].append(np.concatenate([p.numpy() for p in parts]))
  return tuple(np.concatenate(r) for r in results) if results else ()
