"""Hugging Face BERT directories, read into the original's names and written
back from them.

A directory that `save_pretrained` wrote holds `config.json`, the weights
(`model.safetensors`, shards of it with an index, or `pytorch_model.bin`),
`vocab.txt` and tokenizer settings. Its tensors have PyTorch's names and
its dense layers store their kernels [out, in]; the original's checkpoints
name the same tensors `bert/encoder/layer_0/...` and store kernels [in,
out]. Reading turns a directory into the original's names, config and
vocabulary, so that everything after it (loading, fine-tuning, exporting)
is the released format's code; writing does the reverse, for the head
classes of transformers' BERT. Which tensors a head has, under both names,
and which classes hold it, its declaration says (modeling/heads.py). The
weights files' formats are huggingface_weights.py's.
"""

import json
import os

import numpy as np

from data_prep import casing
from modeling import heads as heads_lib
from modeling.checkpoints import huggingface_weights as weight_files
from plumbing import files
from plumbing.errors import UserError

# Hugging Face's activation names -> ours, and back. Its "gelu" is the exact
# (erf) form; the original's tanh approximation is its "gelu_new".
ACTIVATIONS_FROM_HF = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                       "relu": "relu", "tanh": "tanh", "linear": "linear"}
ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu",
                     "tanh": "tanh", "linear": "linear"}

# The fields bert_config.json and config.json share, under the same names.
CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                 "max_position_embeddings", "type_vocab_size", "initializer_range")



def _architectures():
  """transformers' BERT classes -> the heads (parts) they hold, in
  heads.HEADS' order."""
  held = {"BertModel": ()}
  for head in heads_lib.HEADS:
    for name in head.hf_classes:
      held[name] = held.get(name, ()) + (head.part,)
  return held


ARCHITECTURES = _architectures()
# The classes whose outputs are the task's labels, by the head that makes them.
LABELLED = {name: head for head in heads_lib.HEADS for name in head.hf_labelled_classes}
# The classes transformers builds without the pooler: none of their heads reads it.
WITHOUT_POOLER = tuple(name for name, parts in ARCHITECTURES.items()
                       if parts and not any(heads_lib.BY_PART[p].needs_pooler for p in parts))
# Where a head model keeps the encoder.
ENCODER_PREFIX = "bert."
# Tensors a directory may hold that are not weights (index buffers).
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
# Tied to the word embeddings and the masked-LM bias, as in the original.
_TIED = {"cls.predictions.decoder.weight": "bert/embeddings/word_embeddings",
         "cls.predictions.decoder.bias": "cls/predictions/output_bias"}
SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "cls_token": "[CLS]", "mask_token": "[MASK]"}


class Pair(object):
  """One tensor under both names: `transpose` for a dense kernel; `shape`
  the original's."""

  def __init__(self, original, hf, shape, transpose=False):
    self.original, self.hf, self.shape, self.transpose = original, hf, tuple(shape), transpose


def _dense(original, hf, inputs, outputs):
  return [Pair(original + "/kernel", hf + ".weight", (inputs, outputs), transpose=True),
          Pair(original + "/bias", hf + ".bias", (outputs,))]


def _layer_norm(original, hf, size):
  return [Pair(original + "/gamma", hf + ".weight", (size,)),
          Pair(original + "/beta", hf + ".bias", (size,))]


def encoder_pairs(config, prefix=ENCODER_PREFIX, pooler=True):
  """The encoder's tensors (config: a dict of CONFIG_FIELDS); `prefix`: the
  encoder's place in the Hugging Face model ("" in a BertModel)."""
  h, i = config["hidden_size"], config["intermediate_size"]
  e, p = "bert/embeddings/", prefix + "embeddings."
  pairs = [Pair(e + "word_embeddings", p + "word_embeddings.weight",
                (config["vocab_size"], h)),
           Pair(e + "token_type_embeddings", p + "token_type_embeddings.weight",
                (config["type_vocab_size"], h)),
           Pair(e + "position_embeddings", p + "position_embeddings.weight",
                (config["max_position_embeddings"], h))]
  pairs += _layer_norm(e + "LayerNorm", p + "LayerNorm", h)
  for n in range(config["num_hidden_layers"]):
    o, p = "bert/encoder/layer_%d/" % n, prefix + "encoder.layer.%d." % n
    for part in ("query", "key", "value"):
      pairs += _dense(o + "attention/self/" + part, p + "attention.self." + part, h, h)
    pairs += _dense(o + "attention/output/dense", p + "attention.output.dense", h, h)
    pairs += _layer_norm(o + "attention/output/LayerNorm", p + "attention.output.LayerNorm", h)
    pairs += _dense(o + "intermediate/dense", p + "intermediate.dense", h, i)
    pairs += _dense(o + "output/dense", p + "output.dense", i, h)
    pairs += _layer_norm(o + "output/LayerNorm", p + "output.LayerNorm", h)
  if pooler:
    pairs += _dense("bert/pooler/dense", prefix + "pooler.dense", h, h)
  return pairs


def head_pairs(part, config, num_outputs=None):
  """A head's tensors; `num_outputs` for the sized ones (classifiers)."""
  head = heads_lib.BY_PART[part]
  shapes = head.shapes(config["hidden_size"], config["vocab_size"], num_outputs)
  return [Pair(head.original_prefix + suffix, head.hf_prefix + "." + hf, shapes[suffix],
               transpose=transpose)
          for suffix, (hf, transpose) in head.hf_suffixes.items()]


def model_pairs(architecture, config, num_outputs=None, pooler=True):
  """Every tensor of a transformers class, the encoder's first."""
  heads = ARCHITECTURES[architecture]
  pairs = encoder_pairs(config, ENCODER_PREFIX if architecture != "BertModel" else "",
                        pooler=pooler and architecture not in WITHOUT_POOLER)
  for head in heads:
    pairs += head_pairs(head, config, num_outputs)
  return pairs


# ---------------------------------------------------------------- reading


class HuggingFaceModel(object):
  """What a directory holds, in the original's terms: `config` (the
  bert_config.json fields), `tensors` ({original name: float32 array}),
  `vocab` (the vocabulary's lines), `do_lower_case`, `architecture`, and
  `notes` (lines worth telling the user)."""

  def __init__(self, config, tensors, vocab, do_lower_case, architecture, notes):
    self.config, self.tensors, self.vocab = config, tensors, vocab
    self.do_lower_case, self.architecture, self.notes = do_lower_case, architecture, notes


def is_huggingface_directory(path):
  return os.path.isdir(path) and os.path.exists(os.path.join(path, "config.json"))


def read_config(directory):
  """config.json -> (bert_config fields, architecture or None); one error
  line naming the key for anything the original architecture cannot run."""
  path = os.path.join(directory, "config.json")
  hf = files.read_json(path)
  if not isinstance(hf, dict):
    raise UserError("%s: expected a JSON object." % path)

  def refuse(key, why):
    raise UserError("%s: \"%s\": %r: %s" % (path, key, hf.get(key), why))

  if hf.get("model_type", "bert") != "bert":
    refuse("model_type", "not a BERT model; only model_type \"bert\" converts to the "
                         "original's architecture.")
  if hf.get("position_embedding_type", "absolute") != "absolute":
    refuse("position_embedding_type", "the original has absolute position embeddings only.")
  for key in ("is_decoder", "add_cross_attention"):
    if hf.get(key):
      refuse(key, "a decoder; the original is an encoder only.")
  if hf.get("layer_norm_eps", 1e-12) != 1e-12:
    refuse("layer_norm_eps", "the original's layer norms use 1e-12.")
  if hf.get("tie_word_embeddings", True) is False:
    refuse("tie_word_embeddings", "the original's masked-LM output shares the word "
                                  "embeddings.")
  activation = hf.get("hidden_act", "gelu")
  if activation not in ACTIVATIONS_FROM_HF:
    refuse("hidden_act", "supported: %s." % ", ".join(sorted(ACTIVATIONS_FROM_HF)))
  missing = [k for k in ("vocab_size", "hidden_size", "num_hidden_layers",
                         "num_attention_heads", "intermediate_size") if k not in hf]
  if missing:
    raise UserError("%s: missing \"%s\"." % (path, missing[0]))
  config = {k: hf[k] for k in CONFIG_FIELDS if k in hf}
  config.setdefault("max_position_embeddings", 512)
  config.setdefault("type_vocab_size", 2)
  config["hidden_act"] = ACTIVATIONS_FROM_HF[activation]
  architectures = hf.get("architectures") or [None]
  architecture = architectures[0]
  if architecture is not None and architecture not in ARCHITECTURES:
    refuse("architectures", "supported: %s." % ", ".join(sorted(ARCHITECTURES)))
  return config, architecture


def heads_in(names, architecture):
  """The heads (parts) whose tensors `names` hold. Where two heads share a
  prefix (`classifier.`), the one `architecture` holds: a tagger's in a
  BertForTokenClassification."""
  held = ARCHITECTURES.get(architecture) or ()
  found = []
  for head in heads_lib.HEADS:
    sharing = [h.part for h in heads_lib.HEADS if h.hf_prefix == head.hf_prefix]
    owner = next((part for part in sharing if part in held), sharing[0])
    first = head.hf_prefix + "." + next(iter(head.hf_suffixes.values()))[0]
    if first in names and head.part == owner:
      found.append(head.part)
  return found


def _lookup(tensors, name):
  """A tensor under its name, or the older LayerNorm names (gamma, beta)."""
  if name in tensors:
    return name
  for new, old in ((".LayerNorm.weight", ".LayerNorm.gamma"),
                   (".LayerNorm.bias", ".LayerNorm.beta")):
    if name.endswith(new) and name[:-len(new)] + old in tensors:
      return name[:-len(new)] + old
  return None


def original_tensors(tensors, config, architecture, source):
  """The directory's tensors under the original's names, [in, out] kernels,
  float32, with every head they hold (whatever class config.json names:
  bert-base-uncased says BertForMaskedLM and holds the next-sentence head
  too); one error line for a missing, misshapen or unplaceable tensor.
  Returns ({original name: array}, notes)."""
  notes = []
  names = set(tensors)
  prefix = ENCODER_PREFIX if any(n.startswith(ENCODER_PREFIX) for n in names) else ""
  num_outputs = next((np.shape(tensors[h.hf_prefix + ".weight"])[0] for h in heads_lib.HEADS
                      if h.sized and h.hf_prefix + ".weight" in names), None)
  pooler = prefix + "pooler.dense.weight"
  has_pooler = _lookup(tensors, pooler) is not None
  if not has_pooler and architecture not in WITHOUT_POOLER:
    notes.append("There is no pooler (%s): the pooled output, which classifiers read, "
                 "starts from random weights, as a new head's." % pooler)
  pairs = encoder_pairs(config, prefix, pooler=has_pooler)
  for head in heads_in(names, architecture):
    pairs += head_pairs(head, config, num_outputs)
  result = {}
  used = set()
  for pair in pairs:
    found = _lookup(tensors, pair.hf)
    if found is None and pair.hf == "cls.predictions.bias":
      found = _lookup(tensors, "cls.predictions.decoder.bias")
    if found is None:
      raise UserError("%s: tensor %s is missing." % (source, pair.hf))
    value = np.asarray(tensors[found])
    value = value.T if pair.transpose else value
    if tuple(value.shape) != pair.shape:
      raise UserError("%s: tensor %s has shape %s; config.json makes it %s." % (
          source, found, list(np.shape(tensors[found])),
          list(pair.shape[::-1] if pair.transpose else pair.shape)))
    result[pair.original] = np.ascontiguousarray(value, dtype=np.float32)
    used.add(found)
  for name, original in _TIED.items():
    if name in names and original in result:
      if not np.array_equal(np.asarray(tensors[name], np.float32).reshape(
          result[original].shape), result[original]):
        raise UserError("%s: tensor %s differs from %s, which the original ties it to; "
                        "the original architecture cannot hold both." %
                        (source, name, original))
      used.add(name)
  for name in sorted(names - used):
    if not name.endswith(_BUFFERS):
      raise UserError("%s: tensor %s has no place in the original architecture." %
                      (source, name))
  return result, notes


def read_vocab(directory):
  """The vocabulary's lines: vocab.txt, or the WordPiece model in tokenizer.json."""
  path = os.path.join(directory, "vocab.txt")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      return f.read().splitlines()
  path = os.path.join(directory, "tokenizer.json")
  if os.path.exists(path):
    model = files.read_json(path).get("model") or {}
    if model.get("type") != "WordPiece":
      raise UserError("%s: the tokenizer is %s, not BERT's WordPiece." % (
          path, model.get("type")))
    by_id = sorted((i, token) for token, i in model["vocab"].items())
    if [i for i, _ in by_id] != list(range(len(by_id))):
      raise UserError("%s: the vocabulary's ids are not 0..%d." % (path, len(by_id) - 1))
    return [token for _, token in by_id]
  raise UserError("%s: no vocab.txt (or tokenizer.json): the tokenizer's vocabulary is "
                  "needed too." % directory)


def read_do_lower_case(directory):
  """Whether the directory's tokenizer lower-cases (and strips accents), as
  the original's --do_lower_case (transformers' default, True, where nothing
  says); one error line for settings its tokenizer cannot follow."""
  recorded = casing.read(directory)
  return True if recorded is None else recorded.do_lower_case


def read_directory(directory):
  """A Hugging Face BERT directory as a HuggingFaceModel."""
  if not is_huggingface_directory(directory):
    raise UserError("%s: no config.json: not a Hugging Face model directory (save_pretrained "
                    "writes config.json, model.safetensors and vocab.txt)." % directory)
  config, architecture = read_config(directory)
  tensors = weight_files.read_tensors(directory)
  source = os.path.join(directory, next(n for n in weight_files.WEIGHT_FILES
                                        if os.path.exists(os.path.join(directory, n))))
  tensors, notes = original_tensors(tensors, config, architecture, source)
  architecture = architecture or architecture_for(original_heads(tensors))
  vocab = read_vocab(directory)
  if len(vocab) > config["vocab_size"]:
    raise UserError("%s: the vocabulary has %d entries, more than vocab_size %d in "
                    "config.json." % (directory, len(vocab), config["vocab_size"]))
  do_lower_case = read_do_lower_case(directory)
  return HuggingFaceModel(config, tensors, vocab, do_lower_case, architecture, notes)


# ---------------------------------------------------------------- writing


def original_heads(tensors):
  """The heads whose tensors {original name: ...} holds, in heads.HEADS' order."""
  return [head.part for head in heads_lib.HEADS
          if head.original_prefix + next(iter(head.hf_suffixes)) in tensors]


def architecture_for(heads, requested=None):
  """The transformers class for a model holding `heads` (BertWithHeads'
  part names), or `requested` if those heads can fill it."""
  if requested:
    if requested not in ARCHITECTURES:
      raise UserError("--hf_architecture=%s: supported: %s." % (
          requested, ", ".join(sorted(ARCHITECTURES))))
    lacking = [h for h in ARCHITECTURES[requested] if h not in heads]
    if lacking:
      raise UserError("--hf_architecture=%s needs the %s head, which the checkpoint lacks "
                      "(it has: %s)." % (requested, lacking[0], ", ".join(heads) or "none"))
    return requested
  heads = tuple(heads)
  for architecture, held in ARCHITECTURES.items():
    if held == heads:
      return architecture
  raise UserError("The checkpoint holds several heads (%s); choose the one to write with "
                  "--hf_architecture (%s)." % (", ".join(heads), ", ".join(sorted(
                      a for a, held in ARCHITECTURES.items() if held and set(held) <= set(heads)))))


def hf_config(config, architecture, num_outputs=None, label_names=None, problem=None):
  """config.json's contents for `config` (a bert_config dict); `problem`: a
  classifier's heads.MULTI_LABEL or the like (from its output count if not
  given)."""
  if config.get("causal_attention"):
    raise UserError("A left-to-right (causal_attention) model has no Hugging Face BERT "
                    "counterpart.")
  hf = {"architectures": [architecture], "model_type": "bert"}
  hf.update({k: config[k] for k in CONFIG_FIELDS})
  hf.update(hidden_act=ACTIVATIONS_TO_HF[config.get("hidden_act", "gelu").lower()],
            layer_norm_eps=1e-12, pad_token_id=0, position_embedding_type="absolute",
            tie_word_embeddings=True, dtype="float32")
  if architecture in LABELLED:
    if label_names and len(label_names) != num_outputs:
      raise UserError("%d label names (--label_names, or the run's labels.txt) for a "
                      "classifier of %d outputs." % (len(label_names), num_outputs))
    names = label_names or ["LABEL_%d" % i for i in range(num_outputs)]
    hf.update(LABELLED[architecture].hf_label_entries(names, problem))
  return hf


def hf_tensors(tensors, config, architecture):
  """{original name: array} -> {Hugging Face name: float32 array} for
  `architecture` (heads the checkpoint holds beyond it are left out)."""
  num_outputs = next((np.shape(tensors[h.original_prefix + "output_weights"])[0]
                      for h in heads_lib.HEADS
                      if h.sized and h.original_prefix + "output_weights" in tensors), None)
  pairs = model_pairs(architecture, config, num_outputs,
                      pooler="bert/pooler/dense/kernel" in tensors)
  result = {}
  for pair in pairs:
    if pair.original not in tensors:
      raise UserError("The checkpoint lacks %s, which a %s needs." % (pair.original,
                                                                      architecture))
    value = np.asarray(tensors[pair.original], np.float32)
    result[pair.hf] = np.ascontiguousarray(value.T if pair.transpose else value)
  return result, num_outputs


def tokenizer_files(do_lower_case, max_length):
  """tokenizer_config.json and special_tokens_map.json, as transformers'
  BertTokenizer reads them."""
  config = dict(SPECIAL_TOKENS, tokenizer_class="BertTokenizer",
                **casing.settings(do_lower_case), do_basic_tokenize=True,
                model_max_length=max_length, clean_up_tokenization_spaces=True)
  return {"tokenizer_config.json": json.dumps(config, indent=2) + "\n",
          "special_tokens_map.json": json.dumps(SPECIAL_TOKENS, indent=2) + "\n"}


def write_directory(directory, config, tensors, vocab, do_lower_case,
                    architecture=None, label_names=None, problem=None, extra=None):
  """Writes a directory transformers' `from_pretrained` loads: config.json,
  model.safetensors, vocab.txt and the tokenizer's settings, and `extra`
  ({path in the directory: text}), all or none. `tensors`: {original name:
  array}; `config`: bert_config fields (dict); `vocab`: the vocabulary's
  text. Returns the architecture written."""
  from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
  architecture = architecture_for(original_heads(tensors), architecture)
  weights, num_outputs = hf_tensors(tensors, config, architecture)
  contents = {
      "config.json": json.dumps(hf_config(config, architecture, num_outputs, label_names,
                                          problem), indent=2) + "\n",
      "vocab.txt": vocab,
      "model.safetensors": safetensors_numpy.save(weights, metadata={"format": "pt"}),
  }
  contents.update(tokenizer_files(do_lower_case, config["max_position_embeddings"]))
  contents.update(extra or {})
  names = sorted(contents)
  for name in names:
    files.makedirs(os.path.dirname(os.path.join(directory, name)))
  with files.atomic_outputs([os.path.join(directory, n) for n in names], mode="wb") as outs:
    for name, out in zip(names, outs):
      data = contents[name]
      out.file.write(data if isinstance(data, bytes) else data.encode("utf-8"))
  return architecture
