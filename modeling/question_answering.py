"""Fine-tuning loss and prediction of the SQuAD span model (BertSpanPredictor)."""

import tensorflow as tf

from modeling import inference


def span_loss_per_example(start_logits, end_logits, start_positions, end_positions):
  """The original's loss per example: the mean of the start and end
  cross-entropies over the sequence positions."""
  xent = tf.nn.sparse_softmax_cross_entropy_with_logits
  start = xent(labels=tf.reshape(tf.cast(start_positions, tf.int32), [-1]),
               logits=tf.cast(start_logits, tf.float32))
  end = xent(labels=tf.reshape(tf.cast(end_positions, tf.int32), [-1]),
             logits=tf.cast(end_logits, tf.float32))
  return (start + end) / 2.0


class SpanLoss(object):
  """Mean span loss of the global batch, for the distributed training loop."""

  def totals(self, features):
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def __call__(self, model, features, totals):
    outputs = model(features, training=True)
    per_example = span_loss_per_example(
        outputs["start_logits"], outputs["end_logits"], features["start_positions"],
        features["end_positions"])
    return tf.reduce_sum(per_example) / totals["examples"]


def predict_logits(strategy, model, dataset):
  """unique_ids, start_logits, end_logits (numpy, input order) of every
  feature in `dataset` (global batches; padding features have id 0)."""
  def replica(features):
    outputs = model(features, training=False)
    return (features["unique_ids"], tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32))
  return inference.run_batches(strategy, replica, dataset)
