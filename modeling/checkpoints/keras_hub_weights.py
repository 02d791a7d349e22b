"""The weight files of a keras-hub BERT preset, in the original's names.

keras-hub saves a model's weights with Keras' own `save_weights`: an HDF5
file of one group per layer, named by the layer's place in the model
(`layers/transformer_encoder_1/_self_attention_layer/query_dense`), each
with a `vars` group holding the layer's variables as datasets `0`, `1`, ...
in the order the layer made them and a `name` attribute (the layer's name).
Keras loads by those paths. `model.weights.h5` holds BertBackbone's,
`task.weights.h5` a task's own (the classifier's dense layer, the masked-LM
head), its optimizer's two scalars and empty groups for its preprocessor.

Here each file is a `Layout`: its groups in order, each with its name and
the original checkpoint names of its variables (with the shape keras-hub
gives them: the attention kernels [hidden, heads, head size] where the
original's are [hidden, hidden], the same numbers in the same order; a
classifier's kernel [hidden, classes], the original's transpose). Reading
and writing go through h5py, which Keras itself uses, so the files are the
ones keras-hub writes, group for group (tests/test_keras_hub_presets.py
compares them).
"""

import io

import h5py
import ml_dtypes
import numpy as np

from plumbing.errors import UserError

# The two scalars a task's compiled Adam keeps (iteration, learning rate):
# keras-hub compiles every task with Adam(5e-5) and saves them with it.
_OPTIMIZER = ("adam", [np.int64(0), np.float32(5e-5)])


class Variable(object):
  """One dataset: the original's tensor `original` of `original_shape`
  (default: `shape`), as keras-hub holds it: reshaped to `shape`, or
  transposed if `transpose`."""

  def __init__(self, original, shape, original_shape=None, transpose=False):
    self.original, self.shape, self.transpose = original, tuple(shape), transpose
    self.original_shape = tuple(original_shape or (shape[::-1] if transpose else shape))

  def to_keras(self, value):
    value = np.asarray(value, np.float32)
    return np.ascontiguousarray((value.T if self.transpose else value).reshape(self.shape))

  def to_original(self, value):
    value = np.asarray(value, np.float32)
    return np.ascontiguousarray((value.T if self.transpose else value).reshape(
        self.original_shape))


class Layout(object):
  """A weights file: [(group path, layer name, [Variable])], and the fixed
  values of the optimizer's group where the file has one."""

  def __init__(self, groups, optimizer=False):
    self.groups, self.optimizer = groups, optimizer

  def variables(self):
    """{(group path, index): Variable}."""
    return {(path, i): v for path, _, variables in self.groups
            for i, v in enumerate(variables)}


def _dense(original, inputs, outputs):
  return [Variable(original + "/kernel", (inputs, outputs)),
          Variable(original + "/bias", (outputs,))]


def _layer_norm(original, size):
  return [Variable(original + "/gamma", (size,)), Variable(original + "/beta", (size,))]


def _numbered(name, n):
  """Keras' name for the n-th layer of a kind: `name`, `name_1`, ..."""
  return name if n == 0 else "%s_%d" % (name, n)


def backbone_layout(config):
  """model.weights.h5 of a BertBackbone for `config` (bert_config fields)."""
  h, i = config["hidden_size"], config["intermediate_size"]
  heads = config["num_attention_heads"]
  size = h // heads
  e = "bert/embeddings/"
  groups = [
      ("", "bert_backbone", []),
      ("layers/add", "embeddings_add", []),
      ("layers/dense", "pooled_dense", _dense("bert/pooler/dense", h, h)),
      ("layers/dropout", "embeddings_dropout", []),
      ("layers/embedding", "segment_embedding",
       [Variable(e + "token_type_embeddings", (config["type_vocab_size"], h))]),
      ("layers/input_layer", "token_ids", []),
      ("layers/input_layer_1", "segment_ids", []),
      ("layers/input_layer_2", "padding_mask", []),
      ("layers/layer_normalization", "embeddings_layer_norm", _layer_norm(e + "LayerNorm", h)),
      ("layers/position_embedding", "position_embedding",
       [Variable(e + "position_embeddings", (config["max_position_embeddings"], h))]),
      ("layers/reversible_embedding", "token_embedding",
       [Variable(e + "word_embeddings", (config["vocab_size"], h))]),
  ]
  for n in range(config["num_hidden_layers"]):
    o = "bert/encoder/layer_%d/" % n
    p = "layers/" + _numbered("transformer_encoder", n) + "/"
    a = p + "_self_attention_layer/"
    groups.append((p[:-1], "transformer_layer_%d" % n, []))
    groups.append((p + "_feedforward_dropout", "feedforward_dropout", []))
    groups.append((p + "_feedforward_intermediate_dense", "feedforward_intermediate_dense",
                   _dense(o + "intermediate/dense", h, i)))
    groups.append((p + "_feedforward_layer_norm", "feedforward_layer_norm",
                   _layer_norm(o + "output/LayerNorm", h)))
    groups.append((p + "_feedforward_output_dense", "feedforward_output_dense",
                   _dense(o + "output/dense", i, h)))
    groups.append((p + "_self_attention_dropout", "self_attention_dropout", []))
    groups.append((a[:-1], "self_attention_layer", []))
    groups.append((a + "_dropout_layer", _numbered("dropout", n), []))
    groups.append((a + "_softmax", _numbered("softmax", n), []))
    for part, name in (("key", "key"), ("output", "attention_output"), ("query", "query"),
                       ("value", "value")):
      original = o + ("attention/output/dense" if part == "output" else
                      "attention/self/" + part)
      if part == "output":
        variables = [Variable(original + "/kernel", (heads, size, h), (h, h)),
                     Variable(original + "/bias", (h,))]
      else:
        variables = [Variable(original + "/kernel", (h, heads, size), (h, h)),
                     Variable(original + "/bias", (heads, size), (h,))]
      groups.append((a + part + "_dense", name, variables))
    groups.append((p + "_self_attention_layer_norm", "self_attention_layer_norm",
                   _layer_norm(o + "attention/output/LayerNorm", h)))
  return Layout(groups)


def classifier_layout(config, num_classes):
  """task.weights.h5 of a BertTextClassifier: dropout, then the dense layer
  `logits` on the pooled output (the original's output_weights, [classes,
  hidden], transposed)."""
  return Layout([
      ("", "bert_text_classifier", []),
      ("layers/dense", "logits",
       [Variable("output_weights", (config["hidden_size"], num_classes), transpose=True),
        Variable("output_bias", (num_classes,))]),
      ("layers/dropout", "classifier_dropout", []),
      ("preprocessor", "bert_text_classifier_preprocessor", []),
      ("preprocessor/tokenizer", "bert_tokenizer", []),
  ], optimizer=True)


def masked_lm_layout(config):
  """task.weights.h5 of a BertMaskedLM: the head's transform and output bias
  (its output matrix is the word embeddings, as the original's)."""
  h = config["hidden_size"]
  c = "cls/predictions/"
  return Layout([
      ("", "bert_masked_lm", []),
      ("layers/input_layer_3", "mask_positions", []),
      ("layers/masked_lm_head", "mlm_head",
       [Variable(c + "output_bias", (config["vocab_size"],))]),
      ("layers/masked_lm_head/_intermediate_dense", "intermediate_dense",
       _dense(c + "transform/dense", h, h)),
      ("layers/masked_lm_head/_intermediate_layer_norm", "intermediate_layer_norm",
       _layer_norm(c + "transform/LayerNorm", h)),
      ("preprocessor", "bert_masked_lm_preprocessor", []),
      ("preprocessor/tokenizer", "bert_tokenizer", []),
  ], optimizer=True)


def _vars_path(path):
  return path + "/vars" if path else "vars"


def to_bytes(layout, tensors):
  """The HDF5 file of `layout` holding `tensors` ({original name: array})."""
  buffer = io.BytesIO()
  with h5py.File(buffer, "w") as f:
    for path, name, variables in layout.groups:
      group = f.create_group(_vars_path(path))
      group.attrs["name"] = name
      for index, variable in enumerate(variables):
        group[str(index)] = variable.to_keras(tensors[variable.original])
    if layout.optimizer:
      name, values = _OPTIMIZER
      group = f.create_group("optimizer/vars")
      group.attrs["name"] = name
      for index, value in enumerate(values):
        group[str(index)] = value
  return buffer.getvalue()


def _datasets(f):
  """{(group path, index): dataset} of every variable in the file."""
  found = {}

  def visit(name, item):
    if isinstance(item, h5py.Dataset):
      group, _, index = name.rpartition("/")
      path = group[:-len("/vars")] if group.endswith("/vars") else group[:-len("vars")]
      found[(path, int(index) if index.isdigit() else index)] = item
  f.visititems(visit)
  return found


def _as_float32(dataset):
  value = dataset[()]
  if dataset.attrs.get("dtype") == "bfloat16":  # Keras marks what HDF5 cannot name.
    value = np.asarray(value).view(ml_dtypes.bfloat16)
  return np.asarray(value, np.float32)


def read(path, layout):
  """{original name: float32 array} of the weights file at `path` laid out
  as `layout`. One error line for a missing, misshapen or unplaceable
  variable."""
  try:
    f = h5py.File(path, "r")
  except OSError as e:
    raise UserError("%s: not a readable HDF5 weights file (%s); copy it again." %
                    (path, e)) from None
  with f:
    datasets = _datasets(f)
    tensors = {}
    for key, variable in layout.variables().items():
      where = "%s/vars/%s" % key if key[0] else "vars/%s" % key[1]
      if key not in datasets:
        raise UserError("%s: %s (%s) is missing: not a BERT preset of this configuration." %
                        (path, where, variable.original))
      dataset = datasets[key]
      if tuple(dataset.shape) != variable.shape:
        raise UserError("%s: %s (%s) has shape %s; config.json makes it %s." % (
            path, where, variable.original, list(dataset.shape), list(variable.shape)))
      tensors[variable.original] = variable.to_original(_as_float32(dataset))
    for key in sorted(set(datasets) - set(layout.variables()), key=str):
      if layout.optimizer and key[0] == "optimizer":
        continue  # The optimizer's state: not part of the model.
      raise UserError("%s: %s/vars/%s has no place in the original architecture." %
                      (path, key[0], key[1]))
  return tensors


def parameter_count(layout):
  """The number of weights in a layout (metadata.json's parameter_count)."""
  return sum(int(np.prod(v.shape)) for v in layout.variables().values())
