"""BertConfig: the original's fields, defaults and JSON format, validated."""

import copy
import json

from plumbing.errors import UserError

# "gelu" is the original's tanh approximation of GELU, as every released
# checkpoint was trained with; "gelu_exact" is the erf form, Hugging Face's
# "gelu", which models trained there (most of the Hub's) were trained with.
_ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# name -> (default, accepted types); vocab_size has no default.
_FIELDS = {
    "vocab_size": (None, (int,)),
    "hidden_size": (768, (int,)),
    "num_hidden_layers": (12, (int,)),
    "num_attention_heads": (12, (int,)),
    "intermediate_size": (3072, (int,)),
    "hidden_act": ("gelu", (str,)),
    "hidden_dropout_prob": (0.1, (int, float)),
    "attention_probs_dropout_prob": (0.1, (int, float)),
    "max_position_embeddings": (512, (int,)),
    "type_vocab_size": (16, (int,)),
    "initializer_range": (0.02, (int, float)),
}


class BertConfig(object):
  """Model hyper-parameters, as in the released `bert_config.json` files.

  Unknown keys (the Chinese model's `pooler_*`, `directionality`) are kept as
  attributes and written back, as the original did. One key of ours joins
  them: `"causal_attention": true` makes a left-to-right model (each position
  attends only to itself and earlier ones; the pooler reads the last real
  token), for the paper's LTR ablation; absent means false, the original.
  """

  def __init__(self, vocab_size, hidden_size=768, num_hidden_layers=12,
               num_attention_heads=12, intermediate_size=3072,
               hidden_act="gelu", hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1, max_position_embeddings=512,
               type_vocab_size=16, initializer_range=0.02):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.num_hidden_layers = num_hidden_layers
    self.num_attention_heads = num_attention_heads
    self.hidden_act = hidden_act
    self.intermediate_size = intermediate_size
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    if vocab_size is not None:
      self.validate()

  @classmethod
  def from_dict(cls, json_object, source="config"):
    if not isinstance(json_object, dict):
      raise UserError("%s: expected a JSON object, got %s." %
                       (source, type(json_object).__name__))
    if "vocab_size" not in json_object:
      raise UserError("%s: missing field 'vocab_size'." % source)
    config = cls(vocab_size=None)
    for key, value in json_object.items():
      config.__dict__[key] = value
    config.validate(source)
    return config

  @classmethod
  def from_json_file(cls, json_file):
    import tensorflow as tf
    with tf.io.gfile.GFile(json_file, "r") as reader:
      text = reader.read()
    try:
      data = json.loads(text)
    except ValueError as e:
      raise UserError("%s: not valid JSON (%s)." % (json_file, e)) from None
    return cls.from_dict(data, source=json_file)

  def to_dict(self):
    return copy.deepcopy(self.__dict__)

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def validate(self, source="config"):
    """Raises ValueError naming the first bad field."""
    for name, (_, types) in _FIELDS.items():
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, types):
        raise UserError("%s: field '%s' must be %s, got %r." % (
            source, name, " or ".join(t.__name__ for t in types), value))
    for name in ("vocab_size", "hidden_size", "num_hidden_layers",
                 "num_attention_heads", "intermediate_size",
                 "max_position_embeddings", "type_vocab_size"):
      if getattr(self, name) < 1:
        raise UserError("%s: field '%s' must be positive, got %r." %
                         (source, name, getattr(self, name)))
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      if not 0.0 <= getattr(self, name) < 1.0:
        raise UserError("%s: field '%s' must be in [0, 1), got %r." %
                         (source, name, getattr(self, name)))
    if self.hidden_size % self.num_attention_heads:
      raise UserError(
          "%s: field 'hidden_size' (%d) is not a multiple of field "
          "'num_attention_heads' (%d)." % (source, self.hidden_size,
                                           self.num_attention_heads))
    if not isinstance(getattr(self, "causal_attention", False), bool):
      raise UserError("%s: field 'causal_attention' must be true or false, got %r." % (
          source, self.causal_attention))
    if self.hidden_act.lower() not in _ACTIVATIONS:
      raise UserError("%s: field 'hidden_act' is %r; supported: %s." % (
          source, self.hidden_act, ", ".join(_ACTIVATIONS)))
