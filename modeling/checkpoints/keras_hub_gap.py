"""How far keras-hub's computation of a model is from ours, measured.

Where keras-hub cannot compute a model as ours does (keras_hub.inexact),
the converter writes or reads the nearest model only when asked, and then
says by how much the two differ: the largest absolute difference of the
task's outputs on a few seeded random token sequences, our formulas against
keras-hub's on the same weights. keras-hub's are ours with its choices put
in: the tanh GELU in the encoder, and in its masked-LM head the exact GELU
and a layer-norm epsilon of 1e-5.
"""

import copy

import numpy as np
import tensorflow as tf

from modeling import bert_model
from modeling import heads
from modeling import pooling as pooling_lib
from modeling.blocks import layers
from modeling.checkpoints import keras_hub
from modeling.config import BertConfig

SEQUENCES = 4
LENGTH = 16


def sample_inputs(config, seed=12345):
  """Seeded random ids, every row of a different length (padding after)."""
  rng = np.random.RandomState(seed)
  length = min(LENGTH, config.max_position_embeddings)
  ids = rng.randint(0, config.vocab_size, size=(SEQUENCES, length)).astype(np.int32)
  mask = np.ones_like(ids)
  for row in range(1, SEQUENCES):
    mask[row, max(2, length - 3 * row):] = 0
  segments = np.zeros_like(ids)
  segments[:, length // 2:] = min(1, config.type_vocab_size - 1)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _model(config, tensors, hidden_act):
  config = copy.deepcopy(config)
  config.hidden_act = hidden_act
  shapes = {name: np.shape(value) for name, value in tensors.items()}
  model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                   heads.build(config, heads.in_checkpoint(shapes)))
  for name, variable in model.original_names().items():
    if name in tensors:
      variable.assign(tensors[name])
  return model


def _masked_lm(model, sequence, activation, epsilon):
  """The masked-LM head's logits at every position, with `activation` and
  `epsilon` in its transform."""
  head = model.head("masked_lm")
  x = tf.matmul(sequence, head.transform.kernel) + head.transform.bias
  x = layers.get_activation(activation)(x)
  mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
  x = (x - mean) * tf.math.rsqrt(variance + epsilon) * head.layer_norm.gamma
  x += head.layer_norm.beta
  return tf.matmul(x, model.bert.embedding_table, transpose_b=True) + head.output_bias


def _outputs(model, inputs, task, masked_lm, pooling, normalize):
  """The task's outputs as arrays, compared at real tokens only."""
  encoded = model.bert(inputs, training=False)
  real = inputs["input_mask"].astype(bool)
  sequence = encoded["sequence_output"]
  if task == "text_classifier":
    return [model.classifier(encoded["pooled_output"]).numpy()]
  if task == "text_embedder":
    # BertTextEmbedder pools and normalises as sentence-transformers does.
    return [pooling_lib.sentence_vectors(sequence, inputs["input_mask"], pooling,
                                         normalize).numpy()]
  if task == "masked_lm":
    return [masked_lm(model, sequence).numpy()[real]]
  return [sequence.numpy()[real], encoded["pooled_output"].numpy()]


def largest_difference(config, tensors, task, pooling="mean", normalize=True, seed=12345):
  """The largest absolute difference between our outputs of `task` (a
  keras_hub.TASKS key) and keras-hub's, for `config` (a BertConfig or its
  dict) and `tensors` ({original name: array}): the backbone's last layer
  and pooled output, the classifier's logits, the embedding, or the
  masked-LM logits."""
  if isinstance(config, dict):
    config = BertConfig.from_dict(config)
  inputs = sample_inputs(config, seed)
  ours = _outputs(_model(config, tensors, config.hidden_act), inputs, task,
                  lambda m, s: _masked_lm(m, s, config.hidden_act, 1e-12), pooling, normalize)
  theirs = _outputs(_model(config, tensors, "gelu"), inputs, task,
                    lambda m, s: _masked_lm(m, s, keras_hub.MASKED_LM_ACTIVATION,
                                            keras_hub.MASKED_LM_EPSILON), pooling, normalize)
  return max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))


def describe():
  """What largest_difference compares, for the log line."""
  return "on %d seeded random sequences of up to %d tokens" % (SEQUENCES, LENGTH)
