"""Running a model over a whole dataset, under any strategy: what evaluation,
prediction and feature extraction share.

Two ways: fixed shapes (full batches at the records' padded length, the last
batch filled with padding examples, as the original ran on TPUs), or
length-aware (batches of records of about the same length, each cut to its
longest row: no computation on padding, outputs put back in input order).
Both give the same outputs for every real example.
"""

from absl import logging
import numpy as np
import tensorflow as tf

from modeling import heads
from modeling import pooling as pooling_lib
from plumbing import progress as progress_lib
from plumbing import tf_example


def padded_batches(dataset, num_examples, batch_size):
  """Batches of exactly `batch_size`: the last is filled with padding
  examples (every feature zero, so is_real_example is 0), as the original
  did on TPUs; compiled steps then see one shape."""
  padding = -num_examples % batch_size
  if padding:
    zeros = dataset.take(1).map(tf_example.without_autograph(
        lambda f: {k: tf.zeros_like(v) for k, v in f.items()})).repeat(padding)
    dataset = dataset.concatenate(zeros)
  return dataset.batch(batch_size, drop_remainder=True)


def stream_batches(strategy, replica_fn, dataset, progress=None):
  """replica_fn(features) -> tuple of per-example tensors; yields, for each
  global batch of `dataset` in order, a tuple of numpy arrays. One step
  function, traced once for the dataset's element spec: batches of any
  length (None dimensions) do not retrace it. `progress`: a
  plumbing.progress.Progress counting the batches' rows."""
  distributed = strategy.experimental_distribute_dataset(dataset)

  @tf.function(input_signature=[distributed.element_spec], autograph=False)
  def step(features):
    return strategy.run(replica_fn, args=(features,))

  for features in distributed:
    outputs = tuple(np.concatenate([p.numpy() for p in strategy.experimental_local_results(v)])
                    for v in step(features))
    if progress is not None and outputs:
      progress.advance(len(outputs[0]))
    yield outputs
  if progress is not None:
    progress.finish()


def run_batches(strategy, replica_fn, dataset, progress=None):
  """Like stream_batches, but every batch's outputs concatenated: one numpy
  array per output, in input order."""
  results = None
  for outputs in stream_batches(strategy, replica_fn, dataset, progress):
    if results is None:
      results = [[] for _ in outputs]
    for i, value in enumerate(outputs):
      results[i].append(value)
  return tuple(np.concatenate(r) for r in results) if results else ()


def layer_vectors(model, features, layer_indexes, pooling="none"):
  """The encoder layers `layer_indexes` (Python indexing: -1 is the last) of
  a BertModel, float32 [batch, L, seq, hidden]; with a `pooling` of
  pooling.POOLINGS, one vector per layer [batch, L, hidden]."""
  layers = model(features, training=False)["encoder_outputs"]
  vectors = tf.cast(tf.stack([layers[i] for i in layer_indexes], axis=1), tf.float32)
  if pooling == "none":
    return vectors
  return pooling_lib.pooled(vectors, features["input_mask"], pooling)


def outputs_in_order(strategy, replica_fn, records, num_examples, batch_size,
                     trim_to_multiple=None, sequence_outputs=(), padded_length=None,
                     fill=0.0):
  """replica_fn(features) -> tuple of per-example tensors, run over `records`;
  returns one numpy array per output with a row per record, in input order.

  Fixed shapes (padded_batches) by default; with `trim_to_multiple`,
  length-aware: batches of similar length, each cut to its longest row. The
  outputs listed in `sequence_outputs` (indexes) run along the sequence; they
  come back padded to `padded_length` with `fill`, as one array.
  """
  if not trim_to_multiple:
    padded = num_examples - num_examples % -batch_size
    logging.info("  Num examples = %d (%d actual, %d padding)", padded, num_examples,
                 -num_examples % batch_size)
    outputs = run_batches(strategy, replica_fn, padded_batches(records, num_examples, batch_size),
                          progress_lib.Progress("examples", padded))
    return tuple(output[:num_examples] for output in outputs)
  logging.info("  Num examples = %d, in batches of similar length", num_examples)

  def with_index(features):
    return tuple(replica_fn(features)) + (features["example_index"],)
  parts = None
  for outputs in stream_batches(strategy, with_index, tf_example.length_grouped_batches(
      records, batch_size, trim_to_multiple), progress_lib.Progress("examples", num_examples)):
    if parts is None:
      parts = [[] for _ in outputs]
    for i, output in enumerate(outputs):
      if i in sequence_outputs:
        widths = [(0, 0)] * output.ndim
        widths[1] = (0, padded_length - output.shape[1])
        output = np.pad(output, widths, constant_values=fill)
      parts[i].append(output)
  *outputs, index = [np.concatenate(p) for p in parts]
  order = np.argsort(index, kind="stable")
  return tuple(output[order] for output in outputs)


def classifier_outputs(strategy, model, records, num_examples, batch_size,
                       trim_to_multiple=None):
  """A classifier (or multiple-choice model) over `records`: numpy logits
  (scores [examples], for regression), per-example loss (its head's) and
  is_real_example, in input order (see outputs_in_order)."""
  head = model.head("classifier")

  def replica(features):
    outputs = model(features, training=False)
    logits = outputs["logits"]
    if head.problem == heads.REGRESSION:
      logits = tf.reshape(logits, [-1])
    return logits, head.loss_terms(outputs, features), features["is_real_example"]
  logging.info("  Batch size = %d", batch_size)
  return outputs_in_order(strategy, replica, records, num_examples, batch_size,
                          trim_to_multiple)
