"""BertModel (the encoder) and the models that put heads on it.

    model = BertModel(config)
    outputs = model({"input_ids": ids, "input_mask": mask, "segment_ids": segs},
                    training=False)
    outputs["sequence_output"]   # [batch, seq, hidden]
    outputs["pooled_output"]     # [batch, hidden]: tanh dense on the first token
    outputs["encoder_outputs"]   # one [batch, seq, hidden] per layer
    outputs["embedding_output"]  # [batch, seq, hidden]

`input_mask` defaults to all ones and `segment_ids` to all zeros, as in the
original. A config with `causal_attention` gives a left-to-right encoder
(the paper's LTR ablation): a causal attention mask, and the pooler reads
the last real token, the only one that has seen the whole input. Every
model here can say which original checkpoint name each of its variables has
(`original_names()`), which is all that loading and writing released
checkpoints needs.

Every task model is BertWithHeads given an encoder and its heads: pass a
BertModel (pretrained, or shared) where a BertConfig is asked for, and the
heads go on it; a BertConfig makes a new encoder. Every model rebuilds from
its get_config() (`type(model).from_config(model.get_config())`), under the
dtype policy in effect then, its weights drawn in the same order as the
first time: serving's bfloat16 copy needs no knowledge of the model's class.
"""

import contextlib

import keras
import tensorflow as tf

from plumbing.errors import UserError

from modeling import config as config_lib
from modeling import heads
from modeling.blocks import fused
from modeling.blocks import layers
from modeling.blocks import packed_tokens


class InvalidInputError(UserError):
  """Ids or lengths outside what the model was configured for."""


class _Model(keras.Model):
  """A keras.Model without Keras's guessed SavedModel signature.

  Keras would trace one with float inputs when a SavedModel holds the model;
  ours take integer ids, and serving/ gives the real signatures.
  """

  @property
  def _default_save_signature(self):
    return None

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    if "config" in config:
      config["config"] = config_lib.BertConfig.from_dict(config["config"])
    if "encoder" in config:
      config["encoder"] = BertModel.from_config(config["encoder"])
    if "heads" in config:
      config["head_layers"] = [heads.from_description(h) for h in config.pop("heads")]
    return cls(**config)


def _encoder(encoder_or_config):
  """The BertModel given, or a new one made from the BertConfig given."""
  if isinstance(encoder_or_config, BertModel):
    return encoder_or_config
  return BertModel(encoder_or_config)


class BertModel(_Model):
  """The BERT encoder: embeddings, transformer layers, pooler."""

  def __init__(self, config, validate_inputs=True, **kwargs):
    kwargs.setdefault("name", "bert")
    super().__init__(**kwargs)
    self.config = config
    self.validate_inputs = validate_inputs
    self.embeddings = layers.Embeddings(config, name="embeddings")
    self.encoder_layers = []
    for i in range(config.num_hidden_layers):
      layer = layers.TransformerLayer(config, name="layer_%d" % i)
      # An attribute per layer: TensorFlow checkpoints track attributes, not
      # the layers inside a Python list.
      setattr(self, "layer_%d" % i, layer)
      self.encoder_layers.append(layer)
    self.pooler = layers.Dense(config.hidden_size, config.hidden_size,
                               activation="tanh",
                               initializer_range=config.initializer_range,
                               name="pooler")

  def build(self, input_shape=None):
    self.built = True  # Every weight was created in __init__.

  def get_config(self):
    return {"config": self.config.to_dict(), "validate_inputs": self.validate_inputs,
            "name": self.name}

  @property
  def causal(self):
    return getattr(self.config, "causal_attention", False)

  @property
  def embedding_table(self):
    """The word embeddings [vocab, hidden], shared with the masked-LM output."""
    return self.embeddings.word_embeddings

  def get_embedding_table(self):
    return self.embedding_table

  def _check_inputs(self, input_ids, segment_ids):
    """Fails clearly where the original would silently read garbage (or NaN)."""
    c = self.config
    length = input_ids.shape[1]
    if length is not None and length > c.max_position_embeddings:
      raise InvalidInputError(
          "Sequence length %d exceeds max_position_embeddings=%d of the config." %
          (length, c.max_position_embeddings))
    if not self.validate_inputs:
      return []
    return [
        tf.debugging.assert_less(
            tf.shape(input_ids)[1], c.max_position_embeddings + 1,
            message="Sequence longer than max_position_embeddings=%d" %
            c.max_position_embeddings),
        tf.debugging.assert_non_negative(input_ids, message="Negative input_ids"),
        tf.debugging.assert_less(
            input_ids, tf.cast(c.vocab_size, input_ids.dtype),
            message="input_ids outside the vocabulary (vocab_size=%d)" % c.vocab_size),
        tf.debugging.assert_non_negative(segment_ids, message="Negative segment_ids"),
        tf.debugging.assert_less(
            segment_ids, tf.cast(c.type_vocab_size, segment_ids.dtype),
            message="segment_ids outside type_vocab_size=%d" % c.type_vocab_size),
    ]

  def call(self, inputs, training=False, output_positions=None, pack_tokens=False):
    """The encoder's outputs (see the module docstring).

    With `output_positions` [batch, k], the last layer is computed only at
    those positions (and at the first, for the pooler): `sequence_output`,
    and the last of `encoder_outputs`, are then the [batch, k, hidden]
    vectors at `output_positions`. Heads that read a few positions (masked
    LM, classification) so skip most of a layer's work; the values are
    those of the full computation.

    With `pack_tokens` in training, the token-wise work runs on the real
    tokens only (packed_tokens.PackedTokens): outputs at padded positions are
    then zeros, every other value the same. Not where shapes must be
    static (XLA, TPUs).
    """
    # Inference runs the plain ops: they are as fast as the fused kernels,
    # which pay off only by the backward pass, and XLA would compile those
    # again for every new batch length.
    with contextlib.nullcontext() if training else fused.plain_ops():
      return self._encode(inputs, training, output_positions,
                          pack_tokens and training and not packed_tokens.static_shapes_required())

  def _encode(self, inputs, training, output_positions, pack_tokens):
    input_ids = tf.convert_to_tensor(inputs["input_ids"])
    input_mask = inputs.get("input_mask")
    segment_ids = inputs.get("segment_ids")
    input_mask = (tf.ones_like(input_ids) if input_mask is None
                  else tf.convert_to_tensor(input_mask))
    segment_ids = (tf.zeros_like(input_ids) if segment_ids is None
                   else tf.convert_to_tensor(segment_ids))
    with tf.control_dependencies(self._check_inputs(input_ids, segment_ids)):
      input_ids = tf.identity(input_ids)
    embedding_output = self.embeddings(input_ids, segment_ids, training=training)
    mask_adder = layers.attention_mask_adder(input_mask)
    if self.causal:
      mask_adder += layers.causal_mask_adder(tf.shape(input_ids)[1])
      pool_position = tf.maximum(
          tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=1) - 1, 0)
    else:
      pool_position = tf.zeros([tf.shape(input_ids)[0]], tf.int32)
    positions = last_mask_adder = None
    if output_positions is not None:
      positions = tf.concat([pool_position[:, tf.newaxis],
                             tf.cast(output_positions, tf.int32)], 1)
      # A causal mask has a row per query: keep those of the computed ones.
      last_mask_adder = (tf.gather(mask_adder[:, 0], positions, batch_dims=1)[:, tf.newaxis]
                         if self.causal else mask_adder)
    if pack_tokens:
      encoder_outputs = self._packed_layers(embedding_output, input_mask, mask_adder,
                                            positions, last_mask_adder)
    else:
      x = embedding_output
      encoder_outputs = []
      for i, layer in enumerate(self.encoder_layers):
        if i == len(self.encoder_layers) - 1 and positions is not None:
          x = layer(x, last_mask_adder, training=training, positions=positions)
        else:
          x = layer(x, mask_adder, training=training)
        encoder_outputs.append(x)
    x = encoder_outputs[-1]
    if positions is not None:
      pooled_output = self.pooler(x[:, 0, :])
    elif self.causal:
      pooled_output = self.pooler(tf.gather(x, pool_position, batch_dims=1))
    else:
      pooled_output = self.pooler(x[:, 0, :])
    if positions is not None:
      x = x[:, 1:, :]
      encoder_outputs[-1] = x
    return {
        "sequence_output": x,
        "pooled_output": pooled_output,
        "encoder_outputs": encoder_outputs,
        "embedding_output": embedding_output,
    }

  def _packed_layers(self, embedding_output, input_mask, mask_adder, positions,
                     last_mask_adder):
    """The transformer layers (in training) on the real tokens only; their
    outputs as _encode's loop gives them, zeros at the padding."""
    packing = packed_tokens.PackedTokens(input_mask)
    rows = packing.pack(embedding_output)
    encoder_outputs = []
    for i, layer in enumerate(self.encoder_layers):
      if i == len(self.encoder_layers) - 1 and positions is not None:
        at = layer(rows, last_mask_adder, training=True, packing=packing,
                   positions=packing.rows_at(positions))
        encoder_outputs.append(tf.reshape(
            at, [packing.batch, tf.shape(positions)[1], at.shape[-1]]))
      else:
        rows = layer(rows, mask_adder, training=True, packing=packing)
        encoder_outputs.append(packing.unpack(rows))
    return encoder_outputs

  def original_names(self, prefix="bert/"):
    names = {
        prefix + "embeddings/word_embeddings": self.embeddings.word_embeddings,
        prefix + "embeddings/token_type_embeddings": self.embeddings.token_type_embeddings,
        prefix + "embeddings/position_embeddings": self.embeddings.position_embeddings,
        prefix + "embeddings/LayerNorm/beta": self.embeddings.layer_norm.beta,
        prefix + "embeddings/LayerNorm/gamma": self.embeddings.layer_norm.gamma,
        prefix + "pooler/dense/kernel": self.pooler.kernel,
        prefix + "pooler/dense/bias": self.pooler.bias,
    }
    for i, layer in enumerate(self.encoder_layers):
      names.update(layer.original_names("%sencoder/layer_%d/" % (prefix, i)))
    return names


class BertWithHeads(_Model):
  """A BertModel `encoder` plus the heads it is given (heads.py declares
  each): the base of the task models.

      BertWithHeads(BertModel(config), [heads.MaskedLMHead(config)])

  Each head lives under its declared part name (`masked_lm`, `classifier`,
  ...), so our object-based checkpoints of any task model restore into any
  other model holding the same parts. `heads.build(config, parts)` makes the
  heads a checkpoint holds (`heads.in_checkpoint`). The encoder is made
  before the heads, so that their weights are drawn after its own, as ever.
  """

  def __init__(self, encoder, head_layers=(), **kwargs):
    kwargs.setdefault("name", "bert_with_heads")
    super().__init__(**kwargs)
    self.config = encoder.config
    self.bert = encoder
    self.heads = list(head_layers)
    for head in self.heads:
      setattr(self, head.part, head)

  def build(self, input_shape=None):
    self.built = True  # Every weight was created in __init__.

  def get_config(self):
    return {"encoder": self.bert.get_config(),
            "heads": [heads.described(head) for head in self.heads], "name": self.name}

  def _config_with(self, **arguments):
    """A task model's get_config(): its encoder's, its name and `arguments`."""
    return dict(encoder=self.bert.get_config(), name=self.name, **arguments)

  def head(self, part):
    """The head declared as `part`, or None."""
    return next((h for h in self.heads if h.part == part), None)

  def original_names(self):
    names = self.bert.original_names()
    for head in self.heads:
      names.update(head.original_names())
    return names

  def positions_read(self, inputs):
    """The sequence positions the heads read besides the first, [batch, k]
    (a head's `positions_feature`); None when a head reads them all."""
    if any(head.reads == "sequence" for head in self.heads):
      return None
    for head in self.heads:
      if head.reads == "positions" and head.positions_feature in inputs:
        return inputs[head.positions_feature]
    return tf.zeros([tf.shape(inputs["input_ids"])[0], 0], tf.int32)

  def call(self, inputs, training=False):
    """Encoder outputs plus every head's.

    The last encoder layer runs only at the positions the heads read, so
    `sequence_output` (and the last of `encoder_outputs`) holds the vectors
    at those positions (`masked_lm_positions`; none for classification);
    every position's output is `model.bert(inputs)`.
    """
    encoded = dict(self.bert(inputs, training=training,
                             output_positions=self.positions_read(inputs),
                             pack_tokens=all(head.packable for head in self.heads)))
    for head in self.heads:
      encoded.update(head.outputs(encoded, inputs, self.bert, training))
    return encoded

  def with_losses(self, outputs, inputs):
    """`outputs` plus each head whose labels `inputs` holds: its loss over
    this batch (the terms the training loop minimises, losses.py) and their
    sum `loss`."""
    for head in self.heads:
      if head.label not in inputs:
        continue
      per_example, weights = head.loss_terms(outputs, inputs), head.loss_weights(inputs)
      loss = tf.reduce_sum(weights * per_example) / head.loss_denominator(
          tf.reduce_sum(weights))
      outputs[head.loss_prefix + "per_example_loss"] = per_example
      if head.loss_prefix:
        outputs[head.loss_prefix + "loss"] = loss
      outputs["loss"] = outputs.get("loss", 0.0) + loss
    return outputs


class BertPretrainer(BertWithHeads):
  """BERT with the masked-LM and next-sentence heads of pre-training.

  Inputs add `masked_lm_positions` (and, for losses, `masked_lm_ids`,
  `masked_lm_weights`, `next_sentence_labels`). Outputs add
  `masked_lm_log_probs` [batch * predictions, vocab] and
  `next_sentence_log_probs` [batch, 2] (and their logits); with labels present also the
  original's losses: `masked_lm_loss`, `next_sentence_loss`, `loss`,
  and per-example losses.

  `next_sentence=False` leaves out the next-sentence head, its variables and
  its loss (the paper's "No NSP" ablation). A left-to-right language model
  is this without it, on a causal config, with the next token of every
  position as the "masked" prediction (data_prep/pretraining/dataset.py, left_to_right).
  """

  def __init__(self, encoder, next_sentence=True, **kwargs):
    kwargs.setdefault("name", "bert_pretrainer")
    encoder = _encoder(encoder)
    super().__init__(encoder, heads.build(encoder.config, {"masked_lm": True,
                                                           "next_sentence": next_sentence}),
                     **kwargs)

  def get_config(self):
    return self._config_with(next_sentence=self.head("next_sentence") is not None)

  def call(self, inputs, training=False):
    return self.with_losses(super().call(inputs, training=training), inputs)


class BertClassifier(BertWithHeads):
  """BERT + dropout + dense on the pooled output, as run_classifier.py.

  `num_labels=1` makes it a regressor (the original had no regression task;
  STS-B needs one); `problem=heads.MULTI_LABEL` a multi-label classifier
  (a sigmoid per label). Outputs add `logits`, and `probabilities` for
  classification; with `label_ids` present also `loss` and
  `per_example_loss` (the classifier head's loss, heads.py).
  """

  def __init__(self, encoder, num_labels, head_initializer="truncated_normal", problem=None,
               **kwargs):
    kwargs.setdefault("name", "bert_classifier")
    encoder = _encoder(encoder)
    super().__init__(encoder, [heads.ClassificationHead(
        encoder.config, num_labels, initializer=head_initializer, problem=problem)], **kwargs)
    self.num_labels = num_labels

  def get_config(self):
    return self._config_with(num_labels=self.num_labels,
                             head_initializer=self.classifier.initializer,
                             problem=self.classifier.problem)

  def call(self, inputs, training=False):
    return self._with_loss(super().call(inputs, training=training), inputs)

  def _with_loss(self, outputs, inputs):
    """`outputs` plus probabilities, and the loss when labels are given."""
    probabilities = self.classifier.probabilities(outputs["logits"])
    if probabilities is not None:
      outputs["probabilities"] = probabilities
    return self.with_losses(outputs, inputs)


class BertWindowClassifier(BertClassifier):
  """BertClassifier for texts longer than one sequence, cut into windows
  (tasks/classification/windows.py): inputs [batch, windows, seq], a window
  whose input_mask starts with 0 being absent. Each present window is
  classified; a text's logits are the mean of its windows' logits
  (`pooling="mean"`) or their maximum, label by label (`"max"`), in training
  too. `window_logits` [batch, windows, labels] and `window_present` are
  outputs as well.

  Only present windows run through the encoder (`gather_windows`; their
  count rounded up to a multiple of 8 with empty rows); XLA and TPUs want
  static shapes, so there every window slot runs. The weights are
  BertClassifier's, under the same names: either model loads the other's
  checkpoints.
  """

  POOLINGS = ("mean", "max")

  def __init__(self, encoder, num_labels, pooling="mean", gather_windows=True, **kwargs):
    if pooling not in self.POOLINGS:
      raise ValueError("pooling must be one of %s, not %r." % (self.POOLINGS, pooling))
    super().__init__(encoder, num_labels, **kwargs)
    self.pooling = pooling
    self.gather_windows = gather_windows

  def get_config(self):
    return dict(super().get_config(), pooling=self.pooling,
                gather_windows=self.gather_windows)

  def call(self, inputs, training=False):
    shape = tf.shape(inputs["input_ids"], out_type=tf.int64)
    flat = {name: tf.reshape(inputs[name], [-1, shape[-1]])
            for name in ("input_ids", "input_mask", "segment_ids")}
    present = flat["input_mask"][:, 0] > 0
    if self.gather_windows:
      # The present windows, plus empty rows up to a multiple of 8: fewer
      # distinct shapes for the kernels to be prepared for.
      rows = tf.where(present)
      filler = tf.stack([-tf.shape(rows, out_type=tf.int64)[0] % 8, shape[-1]])
      logits = BertWithHeads.call(
          self, {name: tf.concat([tf.gather_nd(value, rows), tf.zeros(filler, value.dtype)], 0)
                 for name, value in flat.items()}, training=training)["logits"]
      logits = tf.scatter_nd(rows, logits[:tf.shape(rows)[0]],
                             tf.stack([shape[0] * shape[1], self.num_labels]))
    else:
      logits = BertWithHeads.call(self, flat, training=training)["logits"]
    logits = tf.reshape(logits, tf.stack([shape[0], shape[1], self.num_labels]))
    present = tf.reshape(present, shape[:2])
    count = tf.reduce_sum(tf.cast(present, logits.dtype), axis=1)[:, None]
    if self.pooling == "mean":
      combined = tf.reduce_sum(
          logits * tf.cast(present, logits.dtype)[..., None], axis=1) / tf.maximum(count, 1)
    else:
      combined = tf.reduce_max(tf.where(present[..., None], logits, logits.dtype.min), axis=1)
      combined = tf.where(count > 0, combined, tf.zeros_like(combined))  # No window: 0.
    return self._with_loss({"logits": combined, "window_logits": logits,
                            "window_present": present}, inputs)


class BertMultipleChoice(BertWithHeads):
  """BERT scoring `num_choices` sequences per example (SWAG, as the paper
  describes it): one learned vector on each sequence's pooled output (the
  classifier head with one output), then a softmax over the choices.

  Inputs are [batch, num_choices, seq_length]; outputs `logits` and
  `probabilities` [batch, num_choices], and with `label_ids` (the right
  choice's index) also `loss` and `per_example_loss`.
  """

  def __init__(self, encoder, num_choices=4, head_initializer="truncated_normal", **kwargs):
    kwargs.setdefault("name", "bert_multiple_choice")
    encoder = _encoder(encoder)
    # One score per choice; the choices' scores are one label's logits.
    super().__init__(encoder, [heads.ClassificationHead(
        encoder.config, 1, initializer=head_initializer, problem=heads.SINGLE_LABEL)],
                     **kwargs)
    self.num_choices = num_choices

  def get_config(self):
    return self._config_with(num_choices=self.num_choices,
                             head_initializer=self.classifier.initializer)

  def call(self, inputs, training=False):
    sequences = {name: tf.reshape(inputs[name], [-1, tf.shape(inputs[name])[-1]])
                 for name in ("input_ids", "input_mask", "segment_ids")}
    outputs = super().call(sequences, training=training)
    logits = tf.reshape(outputs["logits"], [-1, self.num_choices])
    outputs.update(logits=logits, probabilities=heads.probabilities(heads.SINGLE_LABEL, logits))
    return self.with_losses(outputs, inputs)


class BertEmbedder(BertWithHeads):
  """BERT + heads.SentenceEmbeddingHead: one vector per text, as a
  sentence-transformers model (Transformer, Pooling, optional Normalize)
  makes it.

  Inputs are [batch, seq] or [batch, texts, seq] (in training an anchor,
  its positive and optionally a hard negative; a scored pair's two texts in
  evaluation), every text run through the encoder in one batch; outputs
  `sentence_embedding`, float32 [batch, (texts,) hidden]. Its weights are
  the encoder's alone, under the encoder's names.
  """

  def __init__(self, encoder, pooling="mean", normalize=False, scale=20.0, **kwargs):
    kwargs.setdefault("name", "bert_embedder")
    super().__init__(_encoder(encoder), [heads.SentenceEmbeddingHead(
        pooling=pooling, normalize=normalize, scale=scale)], **kwargs)

  def get_config(self):
    head = self.sentence_embedding
    return self._config_with(pooling=head.pooling, normalize=head.normalize, scale=head.scale)

  def call(self, inputs, training=False):
    ids = tf.convert_to_tensor(inputs["input_ids"])
    shape = tf.shape(ids)
    texts = {name: tf.reshape(inputs.get(name, tf.ones_like(ids)), [-1, shape[-1]])
             for name in ("input_ids", "input_mask")}
    if "segment_ids" in inputs:
      texts["segment_ids"] = tf.reshape(inputs["segment_ids"], [-1, shape[-1]])
    vectors = super().call(texts, training=training)["sentence_embedding"]
    return {"sentence_embedding": tf.reshape(
        vectors, tf.concat([shape[:-1], [self.config.hidden_size]], 0))}


class BertTagger(BertWithHeads):
  """BERT + dropout + a per-token dense layer: `token_logits` [batch, seq,
  num_labels] (named-entity recognition; Hugging Face's
  BertForTokenClassification). With `tag_ids` (-1 where a token has no
  label) also `loss`, the mean over the labelled tokens."""

  def __init__(self, encoder, num_labels, head_initializer="truncated_normal", **kwargs):
    kwargs.setdefault("name", "bert_tagger")
    encoder = _encoder(encoder)
    super().__init__(encoder, [heads.TokenClassificationHead(
        encoder.config, num_labels, initializer=head_initializer)], **kwargs)

  def get_config(self):
    head = self.token_classifier
    return self._config_with(num_labels=head.num_outputs, head_initializer=head.initializer)

  def call(self, inputs, training=False):
    return self.with_losses(super().call(inputs, training=training), inputs)


class BertSpanPredictor(BertWithHeads):
  """BERT + a per-token dense layer giving start and end logits (SQuAD)."""

  def __init__(self, encoder, head_initializer="truncated_normal", **kwargs):
    kwargs.setdefault("name", "bert_span_predictor")
    encoder = _encoder(encoder)
    super().__init__(encoder, [heads.SpanHead(encoder.config, initializer=head_initializer)],
                     **kwargs)

  def get_config(self):
    return self._config_with(head_initializer=self.span.initializer)
