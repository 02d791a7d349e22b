"""Tiny Hugging Face BERT directories made from NumPy, as `save_pretrained`
lays them out (PyTorch's names, [out, in] kernels, safetensors with
"format": "pt"), for every transformers BERT class: the inputs of the
Hugging Face tests (import, export, the README's walk-through)."""

import json
import os

import numpy as np
from safetensors import numpy as safetensors_numpy

from modeling.checkpoints import huggingface

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
         "a", "dog", "ran", "##s", "##ed", ".", ",", "big", "red", "house", "is", "was"]
SIZES = dict(vocab_size=24, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=20, max_position_embeddings=24, type_vocab_size=2)
HEADS = {"BertModel": (), "BertForPreTraining": ("mlm", "nsp"), "BertForMaskedLM": ("mlm",),
         "BertForNextSentencePrediction": ("nsp",),
         "BertForSequenceClassification": ("classifier",),
         "BertForMultipleChoice": ("classifier",), "BertForQuestionAnswering": ("qa",),
         "BertForTokenClassification": ("classifier",)}
NUM_LABELS = {"BertForSequenceClassification": 3, "BertForMultipleChoice": 1,
              "BertForTokenClassification": 5}


def hf_weights(architecture, seed=0, pooler=None, sizes=None):
  """{name: array} as transformers names a `architecture`'s weights."""
  sizes = sizes or SIZES
  rng = np.random.RandomState(seed)
  h, i, v = sizes["hidden_size"], sizes["intermediate_size"], sizes["vocab_size"]
  weights = {}

  def put(name, *shape, scale=0.3, base=0.0):
    weights[name] = (base + scale * rng.normal(size=shape)).astype(np.float32)

  def linear(name, inputs, outputs):
    put(name + ".weight", outputs, inputs)  # PyTorch's [out, in].
    put(name + ".bias", outputs, scale=0.1)

  def norm(name):
    put(name + ".weight", h, scale=0.1, base=1.0)
    put(name + ".bias", h, scale=0.1)

  p = "" if architecture == "BertModel" else "bert."
  put(p + "embeddings.word_embeddings.weight", v, h)
  put(p + "embeddings.position_embeddings.weight", sizes["max_position_embeddings"], h)
  put(p + "embeddings.token_type_embeddings.weight", sizes["type_vocab_size"], h)
  norm(p + "embeddings.LayerNorm")
  for n in range(sizes["num_hidden_layers"]):
    layer = p + "encoder.layer.%d." % n
    for part in ("query", "key", "value"):
      linear(layer + "attention.self." + part, h, h)
    linear(layer + "attention.output.dense", h, h)
    norm(layer + "attention.output.LayerNorm")
    linear(layer + "intermediate.dense", h, i)
    linear(layer + "output.dense", i, h)
    norm(layer + "output.LayerNorm")
  if pooler if pooler is not None else architecture not in huggingface.WITHOUT_POOLER:
    linear(p + "pooler.dense", h, h)
  heads = HEADS[architecture]
  if "mlm" in heads:
    linear("cls.predictions.transform.dense", h, h)
    norm("cls.predictions.transform.LayerNorm")
    put("cls.predictions.bias", v, scale=0.1)
  if "nsp" in heads:
    linear("cls.seq_relationship", h, 2)
  if "classifier" in heads:
    linear("classifier", h, NUM_LABELS[architecture])
  if "qa" in heads:
    linear("qa_outputs", h, 2)
  return weights


def write_hf_directory(directory, architecture, hidden_act="gelu", weights=None,
                       config_changes=None, tokenizer_config=None, sizes=None):
  """The directory (config.json, model.safetensors, vocab.txt,
  tokenizer_config.json) of random weights, or of `weights`."""
  os.makedirs(directory, exist_ok=True)
  sizes = sizes or SIZES
  weights = hf_weights(architecture, sizes=sizes) if weights is None else weights
  config = dict(sizes, architectures=[architecture], model_type="bert", hidden_act=hidden_act,
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
                position_embedding_type="absolute")
  if architecture in NUM_LABELS:
    config["id2label"] = {str(k): "L%d" % k for k in range(NUM_LABELS[architecture])}
  config.update(config_changes or {})
  with open(os.path.join(directory, "config.json"), "w") as f:
    json.dump(config, f)
  safetensors_numpy.save_file(weights, os.path.join(directory, "model.safetensors"),
                              metadata={"format": "pt"})
  with open(os.path.join(directory, "vocab.txt"), "w") as f:
    f.write("".join(t + "\n" for t in VOCAB))
  with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
    json.dump(tokenizer_config or {"do_lower_case": True, "tokenizer_class": "BertTokenizer"},
              f)
  return str(directory)
