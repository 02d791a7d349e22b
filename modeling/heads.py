"""The output heads. Each class is the whole declaration of one head: its
layer, what it reads of the encoder, its outputs, its loss, and its names in
the original's checkpoints and in Hugging Face's. Task models
(bert_model.py), checkpoint detection and conversion (checkpoints/), and the
loss the training loop minimises (losses.py) read these declarations; none
of them lists heads.

A head declares:
  part            its attribute in a task model, so its place in our
                  object-based checkpoints (`model/<part>/...`);
  reads           "pooled" (the first token's pooled vector), "positions"
                  (the vectors at the positions its `positions_feature`
                  lists) or "sequence" (every position);
  original_prefix its variables' prefix in the original's checkpoints;
  hf_prefix,      its tensors' prefix in a Hugging Face directory, with
  hf_suffixes     {original suffix: (Hugging Face suffix, transposed)};
  hf_classes      the transformers classes that hold it, and
  hf_labelled_classes those of them whose outputs are the task's labels
                  (config.json's id2label, hf_label_entries());
  needs_pooler    whether those classes keep the pooler for it;
  packable        whether the encoder may skip padded tokens in training
                  (the span loss reads every position, as the original's);
  loss_prefix     the prefix of its loss among a model's outputs, where a
                  model has several (pre-training);
  sized           whether its output count is the task's (read back from a
                  checkpoint's output_weights), else `fixed_outputs`;
  made()          the head a checkpoint holds, its new weights drawn as a
                  given initializer says;
  outputs()       its entries in the model's outputs (a classifier's
                  `problem` says what they mean, and probabilities() what a
                  user reads of them);
  label           the feature holding its labels (no loss without it);
  loss_terms()    per-example losses, and loss_weights() their weights,
                  from the labels alone: the loss of a batch is
                  sum(weights * losses) / loss_denominator(sum(weights)).

A head's get_config() holds its constructor's arguments (the BertConfig as
a dict) and from_config() makes it again: a model rebuilds its heads
without knowing their classes.
"""

import tensorflow as tf

from modeling import config as config_lib
from modeling import pooling as pooling_lib
from modeling.blocks import layers

# The kinds of problem a classifier head solves, as transformers'
# `problem_type` names them.
SINGLE_LABEL = "single_label_classification"
MULTI_LABEL = "multi_label_classification"
REGRESSION = "regression"


def default_problem(num_labels):
  """The problem of a classifier not told one, as transformers infers it: a
  number for one output, else one label of many."""
  return REGRESSION if num_labels == 1 else SINGLE_LABEL


def probabilities(problem, logits):
  """What a user reads of a classifier's logits (a tensor, or float32 or
  float64 numbers, whose dtype it keeps): a softmax over the labels, a
  sigmoid per label for MULTI_LABEL, None for REGRESSION (the logits are
  the number)."""
  if problem == REGRESSION:
    return None
  logits = tf.convert_to_tensor(logits)
  return tf.sigmoid(logits) if problem == MULTI_LABEL else tf.nn.softmax(logits, axis=-1)


class Head(layers.Layer):
  """What every head shares: its declaration's defaults and its names."""

  part = None
  reads = "pooled"
  positions_feature = None
  original_prefix = ""
  hf_prefix = ""
  hf_suffixes = {"output_weights": ("weight", False), "output_bias": ("bias", False)}
  hf_classes = ()
  hf_labelled_classes = ()
  needs_pooler = True
  packable = True
  loss_prefix = ""
  sized = False
  label = None
  fixed_outputs = None
  num_outputs = None

  def get_config(self):
    return {"config": self.bert_config.to_dict(), "name": self.name}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    if "config" in config:
      config["config"] = config_lib.BertConfig.from_dict(config["config"])
    return cls(**config)

  @classmethod
  def made(cls, config, outputs, initializer="truncated_normal"):
    """The head of a checkpoint's `outputs` (in_checkpoint's value: True, or
    a sized head's output count), new weights drawn as `initializer` says."""
    if cls.sized:
      return cls(config, outputs, initializer=initializer)
    return cls(config, initializer=initializer)

  @classmethod
  def hf_label_entries(cls, label_names, problem=None):
    """What it adds to a Hugging Face config.json where a class of
    hf_labelled_classes holds it: the names of its outputs."""
    return {"id2label": {str(i): name for i, name in enumerate(label_names)},
            "label2id": {name: i for i, name in enumerate(label_names)}}

  def original_names(self):
    """{original checkpoint name: variable}."""
    return {self.original_prefix + suffix: variable
            for suffix, variable in self.variables_by_suffix().items()}

  def variables_by_suffix(self):
    return {"output_weights": self.output_weights, "output_bias": self.output_bias}

  @classmethod
  def shapes(cls, hidden, vocab, num_outputs=None):
    """{original suffix: shape} of its tensors; `num_outputs` for sized heads."""
    outputs = num_outputs if cls.sized else cls.fixed_outputs
    return {"output_weights": (outputs, hidden), "output_bias": (outputs,)}

  def loss_weights(self, features):
    """1 per example."""
    return tf.ones([tf.shape(features[self.label])[0]], tf.float32)

  @staticmethod
  def loss_denominator(total_weight):
    return total_weight


class MaskedLMHead(Head):
  """Transform (dense + activation + LayerNorm), then logits tied to the word
  embeddings plus an output-only bias, on the encoder's vectors at the masked
  positions only ([batch, k, hidden]): [batch * k, vocab] float32 logits."""

  part = "masked_lm"
  reads = "positions"
  positions_feature = "masked_lm_positions"
  original_prefix = "cls/predictions/"
  hf_prefix = "cls.predictions"
  hf_suffixes = {"transform/dense/kernel": ("transform.dense.weight", True),
                 "transform/dense/bias": ("transform.dense.bias", False),
                 "transform/LayerNorm/gamma": ("transform.LayerNorm.weight", False),
                 "transform/LayerNorm/beta": ("transform.LayerNorm.bias", False),
                 "output_bias": ("bias", False)}
  hf_classes = ("BertForPreTraining", "BertForMaskedLM")
  needs_pooler = False
  loss_prefix = "masked_lm_"
  label = "masked_lm_ids"

  def __init__(self, config, **kwargs):
    kwargs.setdefault("name", "cls_predictions")
    super().__init__(**kwargs)
    self.bert_config = config
    self.transform = layers.Dense(config.hidden_size, config.hidden_size,
                                  activation=config.hidden_act,
                                  initializer_range=config.initializer_range,
                                  name="transform_dense")
    self.layer_norm = layers.LayerNorm(config.hidden_size, name="transform_LayerNorm")
    self.output_bias = self.add_weight(name="output_bias", shape=(config.vocab_size,),
                                       initializer="zeros")

  @classmethod
  def made(cls, config, outputs, initializer="truncated_normal"):
    """Drawn as the original's pre-training head, whatever a fine-tuning
    head's initializer."""
    return cls(config)

  @classmethod
  def shapes(cls, hidden, vocab, num_outputs=None):
    return {"transform/dense/kernel": (hidden, hidden), "transform/dense/bias": (hidden,),
            "transform/LayerNorm/gamma": (hidden,), "transform/LayerNorm/beta": (hidden,),
            "output_bias": (vocab,)}

  def variables_by_suffix(self):
    return {"transform/dense/kernel": self.transform.kernel,
            "transform/dense/bias": self.transform.bias,
            "transform/LayerNorm/gamma": self.layer_norm.gamma,
            "transform/LayerNorm/beta": self.layer_norm.beta,
            "output_bias": self.output_bias}

  def call(self, masked_vectors, embedding_table):
    x = tf.reshape(masked_vectors, [-1, masked_vectors.shape[-1]])
    x = self.layer_norm(self.transform(x))
    logits = tf.matmul(x, tf.cast(embedding_table, x.dtype), transpose_b=True)
    return tf.nn.bias_add(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32))

  def outputs(self, encoded, inputs, encoder, training):
    if self.positions_feature not in inputs:
      return {}
    logits = self(encoded["sequence_output"], encoder.embedding_table)
    # Log-probabilities are for users; losses read the logits, and a
    # compiled training step prunes what nothing reads.
    return {"masked_lm_logits": logits,
            "masked_lm_log_probs": tf.nn.log_softmax(logits, axis=-1)}

  def loss_terms(self, outputs, features):
    """Cross-entropy per prediction (weighted by masked_lm_weights, 0 for
    the padding predictions); from the logits, the same as the original's
    -sum(one_hot * log_softmax) without [predictions, vocab] one-hots."""
    return _cross_entropy(outputs["masked_lm_logits"], features["masked_lm_ids"])

  def loss_weights(self, features):
    return tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])

  @staticmethod
  def loss_denominator(total_weight):
    return total_weight + 1e-5  # An all-padding batch stays finite, as the original.


class _OutputWeights(Head):
  """logits = x @ output_weights^T + output_bias, weights stored [out, in],
  drawn as `initializer` (a name in layers.INITIALIZERS) says; float32."""

  def __init__(self, config, num_outputs, initializer="truncated_normal", **kwargs):
    super().__init__(**kwargs)
    self.bert_config = config
    self.num_outputs = num_outputs
    self.initializer = initializer
    self.output_weights = self.add_weight(
        name="output_weights", shape=(num_outputs, config.hidden_size),
        initializer=layers.INITIALIZERS[initializer](config.initializer_range))
    self.output_bias = self.add_weight(name="output_bias", shape=(num_outputs,),
                                       initializer="zeros")

  def logits(self, x):
    logits = tf.matmul(x, tf.cast(self.output_weights, x.dtype), transpose_b=True)
    return tf.nn.bias_add(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32))


def _cross_entropy(logits, labels):
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


class NextSentenceHead(_OutputWeights):
  """2-way classifier on the pooled output. Label 0: B follows A; 1: B is a
  random sentence."""

  part = "next_sentence"
  original_prefix = "cls/seq_relationship/"
  hf_prefix = "cls.seq_relationship"
  hf_classes = ("BertForPreTraining", "BertForNextSentencePrediction")
  loss_prefix = "next_sentence_"
  label = "next_sentence_labels"
  fixed_outputs = 2

  def __init__(self, config, initializer="truncated_normal", **kwargs):
    kwargs.setdefault("name", "cls_seq_relationship")
    super().__init__(config, self.fixed_outputs, initializer=initializer, **kwargs)

  def get_config(self):
    return dict(super().get_config(), initializer=self.initializer)

  def call(self, pooled_output):
    return self.logits(pooled_output)

  def outputs(self, encoded, inputs, encoder, training):
    logits = self(encoded["pooled_output"])
    return {"next_sentence_logits": logits,
            "next_sentence_log_probs": tf.nn.log_softmax(logits, axis=-1)}

  @staticmethod
  def loss_terms(outputs, features):
    return _cross_entropy(outputs["next_sentence_logits"], features["next_sentence_labels"])


class ClassificationHead(_OutputWeights):
  """Dropout (0.1 while training, as the original) + dense on the pooled
  output to `num_labels`. `problem` says what the logits mean: one label of
  many (softmax, cross-entropy), any number of labels (a sigmoid each,
  binary cross-entropy averaged over the labels, as transformers'
  BCEWithLogitsLoss), or a number (squared error; STS-B)."""

  part = "classifier"
  hf_prefix = "classifier"
  hf_classes = ("BertForSequenceClassification", "BertForMultipleChoice")
  hf_labelled_classes = ("BertForSequenceClassification",)
  sized = True
  label = "label_ids"

  def __init__(self, config, num_labels, initializer="truncated_normal", dropout_rate=0.1,
               problem=None, **kwargs):
    kwargs.setdefault("name", "classifier")
    super().__init__(config, num_labels, initializer=initializer, **kwargs)
    self.dropout = layers.Dropout(dropout_rate)
    self.problem = problem or default_problem(num_labels)

  def get_config(self):
    return dict(super().get_config(), num_labels=self.num_outputs,
                initializer=self.initializer, dropout_rate=self.dropout.rate,
                problem=self.problem)

  def call(self, pooled_output, training=False):
    return self.logits(self.dropout(pooled_output, training=training))

  def outputs(self, encoded, inputs, encoder, training):
    return {"logits": self(encoded["pooled_output"], training=training)}

  def probabilities(self, logits):
    """What a user reads of the logits: None for regression."""
    return probabilities(self.problem, logits)

  @classmethod
  def hf_label_entries(cls, label_names, problem=None):
    """The labels' names, and the problem unless it is one label of many
    (transformers' default for several outputs)."""
    entries = super().hf_label_entries(label_names)
    problem = problem or default_problem(len(label_names))
    if problem != SINGLE_LABEL:
      entries["problem_type"] = problem
    return entries

  def loss_terms(self, outputs, features):
    logits, labels = outputs["logits"], features["label_ids"]
    if self.problem == REGRESSION:
      return tf.square(tf.reshape(tf.cast(logits, tf.float32), [-1]) -
                       tf.reshape(tf.cast(labels, tf.float32), [-1]))
    if self.problem == MULTI_LABEL:
      return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
          labels=tf.cast(labels, tf.float32), logits=tf.cast(logits, tf.float32)), axis=-1)
    return _cross_entropy(logits, labels)


class SpanHead(_OutputWeights):
  """Per-token start and end logits, [batch, seq] each (SQuAD)."""

  part = "span"
  reads = "sequence"
  original_prefix = "cls/squad/"
  hf_prefix = "qa_outputs"
  hf_classes = ("BertForQuestionAnswering",)
  needs_pooler = False
  packable = False
  label = "start_positions"
  fixed_outputs = 2

  def __init__(self, config, initializer="truncated_normal", **kwargs):
    kwargs.setdefault("name", "cls_squad")
    super().__init__(config, self.fixed_outputs, initializer=initializer, **kwargs)

  def get_config(self):
    return dict(super().get_config(), initializer=self.initializer)

  def call(self, sequence_output):
    logits = self.logits(sequence_output)  # [batch, seq, 2]
    return logits[:, :, 0], logits[:, :, 1]

  def outputs(self, encoded, inputs, encoder, training):
    start, end = self(encoded["sequence_output"])
    return {"start_logits": start, "end_logits": end}

  @staticmethod
  def loss_terms(outputs, features):
    """The original's: the mean of the start and end cross-entropies over
    the sequence positions (padding included)."""
    return (_cross_entropy(tf.cast(outputs["start_logits"], tf.float32),
                           features["start_positions"]) +
            _cross_entropy(tf.cast(outputs["end_logits"], tf.float32),
                           features["end_positions"])) / 2.0


class TokenClassificationHead(_OutputWeights):
  """Dropout (0.1 while training) + dense to `num_labels` on every token's
  vector: [batch, seq, num_labels] logits (named-entity recognition;
  transformers' BertForTokenClassification)."""

  part = "token_classifier"
  reads = "sequence"
  original_prefix = "cls/token_classification/"
  hf_prefix = "classifier"
  hf_classes = ("BertForTokenClassification",)
  hf_labelled_classes = ("BertForTokenClassification",)
  needs_pooler = False
  sized = True
  label = "tag_ids"

  def __init__(self, config, num_labels, initializer="truncated_normal", dropout_rate=0.1,
               **kwargs):
    kwargs.setdefault("name", "cls_token_classification")
    super().__init__(config, num_labels, initializer=initializer, **kwargs)
    self.dropout = layers.Dropout(dropout_rate)

  def get_config(self):
    return dict(super().get_config(), num_labels=self.num_outputs,
                initializer=self.initializer, dropout_rate=self.dropout.rate)

  def call(self, sequence_output, training=False):
    return self.logits(self.dropout(sequence_output, training=training))

  def outputs(self, encoded, inputs, encoder, training):
    return {"token_logits": self(encoded["sequence_output"], training=training)}

  @staticmethod
  def probabilities(logits):
    """Each token's probability of each label."""
    return probabilities(SINGLE_LABEL, logits)

  @staticmethod
  def loss_terms(outputs, features):
    """Cross-entropy per token, weighted 1 where it has a label (tag_ids >=
    0: a word's first WordPiece), as transformers' token classification
    ignores -100."""
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.maximum(tf.cast(features["tag_ids"], tf.int32), 0),
        logits=tf.cast(outputs["token_logits"], tf.float32))

  def loss_weights(self, features):
    return tf.cast(features["tag_ids"] >= 0, tf.float32)

  @staticmethod
  def loss_denominator(total_weight):
    return tf.maximum(total_weight, 1.0)


class SentenceEmbeddingHead(Head):
  """One vector per text, as a sentence-transformers model makes it: the
  last layer pooled over the text's real tokens (`pooling`, see
  modeling/pooling.py), L2-normalised if `normalize`. No weights of its
  own, so no checkpoint holds it (and it is not in HEADS): a model of it
  is its encoder, for every conversion.

  Its loss is sentence-transformers' MultipleNegativesRankingLoss (in-batch
  negatives): each example holds an anchor, its positive and optionally a
  hard negative, [batch, texts, hidden]; an anchor's scores are `scale`
  times its cosine similarity to every positive and negative of the batch,
  and its loss the cross-entropy of its own positive among them. Under
  several replicas each scores its anchors against the candidates of all
  (gathered with their gradients), so the loss is one device's on the
  whole global batch.
  """

  part = "sentence_embedding"
  reads = "sequence"
  hf_suffixes = {}
  needs_pooler = False
  # No labels: an anchor's target is its own positive's place in the batch,
  # so the loss needs only the texts.
  label = "input_ids"

  def __init__(self, pooling="mean", normalize=False, scale=20.0, **kwargs):
    kwargs.setdefault("name", "sentence_embedding")
    super().__init__(**kwargs)
    if pooling not in pooling_lib.POOLINGS:
      raise ValueError("pooling must be one of %s, not %r." % (pooling_lib.POOLINGS, pooling))
    self.pooling, self.normalize, self.scale = pooling, normalize, scale

  def get_config(self):
    return {"pooling": self.pooling, "normalize": self.normalize, "scale": self.scale,
            "name": self.name}

  def variables_by_suffix(self):
    return {}

  @classmethod
  def shapes(cls, hidden, vocab, num_outputs=None):
    return {}

  def outputs(self, encoded, inputs, encoder, training):
    return {"sentence_embedding": pooling_lib.sentence_vectors(
        encoded["sequence_output"], inputs["input_mask"], self.pooling, self.normalize)}

  def loss_terms(self, outputs, features):
    # Cosine similarity: normalised here whatever the model's vectors are.
    vectors = pooling_lib.l2_normalized(outputs["sentence_embedding"])
    anchors, candidates = vectors[:, 0], vectors[:, 1:]
    first = 0
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
      candidates = context.all_gather(candidates, axis=0)
      first = tf.cast(context.replica_id_in_sync_group, tf.int32) * tf.shape(anchors)[0]
    # Every positive of the global batch, then every negative.
    candidates = tf.reshape(tf.transpose(candidates, [1, 0, 2]), [-1, vectors.shape[-1]])
    scores = self.scale * tf.matmul(anchors, candidates, transpose_b=True)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=first + tf.range(tf.shape(anchors)[0]), logits=scores)


# Every head, in the order checkpoints, models and transformers' classes list them.
HEADS = (MaskedLMHead, NextSentenceHead, ClassificationHead, SpanHead,
         TokenClassificationHead)
BY_PART = {head.part: head for head in HEADS}
_BY_CLASS_NAME = {head.__name__: head for head in HEADS + (SentenceEmbeddingHead,)}


def described(head):
  """What a model's get_config() holds of `head`; from_description() makes it
  again."""
  return {"class_name": type(head).__name__, "config": head.get_config()}


def from_description(description):
  return _BY_CLASS_NAME[description["class_name"]].from_config(description["config"])


def build(config, parts, initializer="truncated_normal"):
  """The heads named in `parts` ({part: True, or the output count of a sized
  head}, as in_checkpoint finds them); `initializer` draws the fine-tuning
  heads' weights."""
  return [head.made(config, parts[head.part], initializer)
          for head in HEADS if parts.get(head.part)]


def in_checkpoint(names_to_shapes):
  """{part: True or output count} of the heads a checkpoint holds, from its
  variable names (the original's or our object-based ones)."""
  found = {}
  for head in HEADS:
    weights = (head.original_prefix +
               ("output_weights" if "output_weights" in head.hf_suffixes else "output_bias"))
    ours = "model/%s/" % head.part
    for name, shape in names_to_shapes.items():
      if name == weights or name.startswith(ours + weights[len(head.original_prefix):]):
        found[head.part] = shape[0] if head.sized else True
  return found
