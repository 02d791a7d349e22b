"""Hugging Face BERT directories in and out (modeling/checkpoints/huggingface.py).

The directories are made from NumPy (tests/hf_directories.py), for every
transformers BERT class and activation. Imported weights must give
what a NumPy forward pass written from Hugging Face's formulas gives (float64,
1e-5); import then export must give back every tensor bit for bit; a
directory the original architecture cannot run must give one error line
naming the key or tensor. No PyTorch and no download needed.
"""

import importlib.util
import json
import math
import os

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy
import tensorflow as tf

from conftest import (MODELING_REF, assert_one_line_error, data_file, reference_checkpoint,
                      reference_inputs, reference_outputs, run_cli_cases)
from hf_directories import HEADS, SIZES, VOCAB, hf_weights, write_hf_directory
import modeling
from modeling import bert_model
from modeling import heads as heads_lib
from modeling.checkpoints import conversion
from modeling.checkpoints import huggingface
from modeling.checkpoints import huggingface_weights
from plumbing.errors import UserError

# ------------------------------------------- Hugging Face's forward pass, in NumPy

_erf = np.vectorize(math.erf)
ACTIVATIONS = {  # transformers' ACT2FN, in float64.
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_new": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) *
                                                   (x + 0.044715 * x ** 3))),
    "relu": lambda x: np.maximum(x, 0.0),
}
ACTIVATIONS["gelu_pytorch_tanh"] = ACTIVATIONS["gelu_new"]


def _layer_norm(x, w, b):
  mean = x.mean(-1, keepdims=True)
  variance = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(variance + 1e-12) * w + b


def hf_forward(weights, architecture, hidden_act, ids, mask, types, sizes=SIZES):
  """BertModel / the head classes' eval-mode outputs, from their formulas
  (`sizes`: the config's hidden_size, num_attention_heads, num_hidden_layers)."""
  w = {k: v.astype(np.float64) for k, v in weights.items()}
  p = "" if architecture == "BertModel" else "bert."
  act = ACTIVATIONS[hidden_act]

  def linear(name, x):
    return x @ w[name + ".weight"].T + w[name + ".bias"]

  length = ids.shape[1]
  x = (w[p + "embeddings.word_embeddings.weight"][ids] +
       w[p + "embeddings.position_embeddings.weight"][:length][None] +
       w[p + "embeddings.token_type_embeddings.weight"][types])
  x = _layer_norm(x, w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"])
  # transformers' extended attention mask: the dtype's lowest value on padding.
  adder = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min
  heads = sizes["num_attention_heads"]
  size = sizes["hidden_size"] // heads

  def split(t):
    return t.reshape(t.shape[0], length, heads, size).transpose(0, 2, 1, 3)

  for n in range(sizes["num_hidden_layers"]):
    layer = p + "encoder.layer.%d." % n
    q, k, v = (split(linear(layer + "attention.self." + part, x))
               for part in ("query", "key", "value"))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + adder
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    attended = _layer_norm(linear(layer + "attention.output.dense", context) + x,
                           w[layer + "attention.output.LayerNorm.weight"],
                           w[layer + "attention.output.LayerNorm.bias"])
    hidden = linear(layer + "output.dense", act(linear(layer + "intermediate.dense", attended)))
    x = _layer_norm(hidden + attended, w[layer + "output.LayerNorm.weight"],
                    w[layer + "output.LayerNorm.bias"])
  out = {"sequence_output": x}
  if p + "pooler.dense.weight" in w:
    out["pooled_output"] = np.tanh(linear(p + "pooler.dense", x[:, 0]))
  heads_of = HEADS[architecture]
  if "mlm" in heads_of:
    t = _layer_norm(act(linear("cls.predictions.transform.dense", x)),
                    w["cls.predictions.transform.LayerNorm.weight"],
                    w["cls.predictions.transform.LayerNorm.bias"])
    out["mlm_logits"] = t @ w[p + "embeddings.word_embeddings.weight"].T + w[
        "cls.predictions.bias"]
  if "nsp" in heads_of:
    out["nsp_logits"] = linear("cls.seq_relationship", out["pooled_output"])
  if architecture == "BertForTokenClassification":
    out["token_logits"] = linear("classifier", x)
  elif "classifier" in heads_of:
    out["logits"] = linear("classifier", out["pooled_output"])
  if "qa" in heads_of:
    span = linear("qa_outputs", x)
    out["start_logits"], out["end_logits"] = span[..., 0], span[..., 1]
  return out


def _inputs():
  rng = np.random.RandomState(7)
  ids = rng.randint(0, SIZES["vocab_size"], size=(3, 9)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 6:] = 0
  mask[2, 3:] = 0
  types = np.zeros_like(ids)
  types[:, 4:] = 1
  return ids, mask, types


def _import(directory, tmp_path, output_format="original"):
  prefix = conversion.import_huggingface(directory, str(tmp_path / "imported" / "bert_model.ckpt"),
                                      output_format)
  config = modeling.BertConfig.from_json_file(str(tmp_path / "imported" / "bert_config.json"))
  shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                   heads_lib.build(config, heads_lib.in_checkpoint(shapes)))
  modeling.load_checkpoint(model, prefix, log=False)
  return model, config


@pytest.mark.parametrize("architecture,hidden_act", [
    ("BertForPreTraining", "gelu"), ("BertForPreTraining", "gelu_new"),
    ("BertModel", "relu"), ("BertForMaskedLM", "gelu_pytorch_tanh"),
    ("BertForSequenceClassification", "gelu"), ("BertForMultipleChoice", "gelu_new"),
    ("BertForQuestionAnswering", "gelu"), ("BertForTokenClassification", "gelu"),
    ("BertForNextSentencePrediction", "gelu"),
])
def test_imported_weights_compute_what_hugging_face_computes(tmp_path, architecture, hidden_act):
  directory = write_hf_directory(tmp_path / "hf", architecture, hidden_act)
  model, config = _import(directory, tmp_path)
  assert config.hidden_act == huggingface.ACTIVATIONS_FROM_HF[hidden_act]
  ids, mask, types = _inputs()
  want = hf_forward(hf_weights(architecture), architecture, hidden_act, ids,
                    mask.astype(np.float64), types)
  inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": types}
  if model.head("masked_lm") is not None:  # Every position "masked": logits everywhere.
    inputs["masked_lm_positions"] = np.tile(np.arange(ids.shape[1], dtype=np.int32), (3, 1))
  got = model(inputs, training=False)
  encoder = model.bert(inputs, training=False)
  real = mask.astype(bool)
  np.testing.assert_allclose(encoder["sequence_output"].numpy()[real],
                             want["sequence_output"][real], atol=1e-5, rtol=0)
  if "pooled_output" in want:
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5, rtol=0)
  expected = {"mlm_logits": "masked_lm_logits", "nsp_logits": "next_sentence_logits",
              "logits": "logits", "start_logits": "start_logits", "end_logits": "end_logits",
              "token_logits": "token_logits"}
  compared = 0
  for theirs, ours in expected.items():
    if theirs not in want:
      continue
    value, reference = got[ours].numpy(), want[theirs]
    if theirs == "mlm_logits":
      value = value.reshape(reference.shape)
    if reference.ndim >= 2 and reference.shape[1] == ids.shape[1]:  # Per token: real ones.
      value, reference = value[real], reference[real]
    np.testing.assert_allclose(value, reference, atol=1e-5, rtol=0)
    compared += 1
  heads = HEADS[architecture]
  assert compared == len(heads) + ("qa" in heads), (compared, architecture)  # qa: start, end.


def _read_safetensors(path):
  with open(path, "rb") as f:
    return safetensors_numpy.load(f.read())


@pytest.mark.parametrize("architecture", sorted(HEADS))
def test_import_then_export_gives_back_every_tensor(tmp_path, architecture):
  directory = write_hf_directory(tmp_path / "hf", architecture, "gelu")
  conversion.import_huggingface(directory, str(tmp_path / "imported" / "bert_model.ckpt"),
                             "original")
  config = modeling.BertConfig.from_json_file(str(tmp_path / "imported" / "bert_config.json"))
  out = str(tmp_path / "back")
  written = conversion.export_huggingface(
      config, str(tmp_path / "imported"), out, str(tmp_path / "imported" / "vocab.txt"),
      do_lower_case=True,
      architecture="BertForMultipleChoice" if architecture == "BertForMultipleChoice" else None)
  assert written == architecture
  source = _read_safetensors(os.path.join(directory, "model.safetensors"))
  back = _read_safetensors(os.path.join(out, "model.safetensors"))
  assert sorted(back) == sorted(source)
  for name, value in source.items():
    np.testing.assert_array_equal(back[name], value, err_msg=name)
  with open(os.path.join(out, "config.json")) as f:
    written_config = json.load(f)
  assert written_config["architectures"] == [architecture]
  assert written_config["hidden_act"] == "gelu"  # The exact form, under its own name.
  for key, value in SIZES.items():
    assert written_config[key] == value, key
  with open(os.path.join(out, "vocab.txt")) as f:
    assert f.read().splitlines() == VOCAB
  with open(os.path.join(out, "tokenizer_config.json")) as f:
    assert json.load(f)["do_lower_case"] is True


def test_older_names_buffers_tied_decoder_and_keras_output(tmp_path):
  """LayerNorm gamma/beta (checkpoints converted from TF long ago), index
  buffers, and the decoder saved tied: all read; --output_format=keras
  gives the same weights as original."""
  weights = hf_weights("BertForPreTraining")
  older = {}
  for name, value in weights.items():
    name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
        "LayerNorm.bias", "LayerNorm.beta")
    older[name] = value
  older["bert.embeddings.position_ids"] = np.arange(SIZES["max_position_embeddings"])[None]
  older["cls.predictions.decoder.weight"] = weights["bert.embeddings.word_embeddings.weight"]
  older["cls.predictions.decoder.bias"] = weights["cls.predictions.bias"]
  directory = write_hf_directory(tmp_path / "hf", "BertForPreTraining", weights=older)
  model, _ = _import(directory, tmp_path / "a")
  keras_model, _ = _import(directory, tmp_path / "b", output_format="keras")
  names = model.original_names()
  assert len(names) == len(weights)
  for name, variable in keras_model.original_names().items():
    np.testing.assert_array_equal(variable.numpy(), names[name].numpy(), err_msg=name)
  np.testing.assert_array_equal(names["bert/encoder/layer_1/output/LayerNorm/gamma"].numpy(),
                                weights["bert.encoder.layer.1.output.LayerNorm.weight"])
  np.testing.assert_array_equal(names["bert/encoder/layer_0/intermediate/dense/kernel"].numpy(),
                                weights["bert.encoder.layer.0.intermediate.dense.weight"].T)


def test_bfloat16_and_sharded_weights_read(tmp_path):
  weights = hf_weights("BertModel")
  directory = write_hf_directory(tmp_path / "hf", "BertModel", weights=weights)
  os.remove(os.path.join(directory, "model.safetensors"))
  names = sorted(weights)
  index = {}
  for shard, part in enumerate((names[:20], names[20:])):
    file_name = "model-%05d-of-00002.safetensors" % (shard + 1)
    tensors = {n: weights[n] for n in part}
    if shard == 1:  # bfloat16, which NumPy lacks: stored as float32's top 16 bits.
      data = _as_bfloat16(tensors)
    else:
      data = safetensors_numpy.save(tensors, metadata={"format": "pt"})
    with open(os.path.join(directory, file_name), "wb") as f:
      f.write(data)
    index.update({n: file_name for n in part})
  with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {}, "weight_map": index}, f)
  read = huggingface_weights.read_tensors(directory)
  assert sorted(read) == names
  for name in names[:20]:
    np.testing.assert_array_equal(read[name], weights[name])
  for name in names[20:]:  # bfloat16 keeps 8 bits of mantissa.
    truncated = (weights[name].view(np.uint32) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(read[name], truncated)


def _as_bfloat16(tensors):
  """A safetensors file of BF16 tensors, written by hand: the format's
  8-byte header size, JSON header, then the bytes."""
  header, body = {}, b""
  for name, value in tensors.items():
    data = (value.view(np.uint32) >> 16).astype("<u2").tobytes()
    header[name] = {"dtype": "BF16", "shape": list(value.shape),
                    "data_offsets": [len(body), len(body) + len(data)]}
    body += data
  encoded = json.dumps(header).encode()
  encoded += b" " * (-len(encoded) % 8)
  return len(encoded).to_bytes(8, "little") + encoded + body


def test_a_tanh_gelu_model_exports_to_what_hugging_face_computes(tmp_path):
  """The original's tanh-GELU reference model, exported: transformers'
  formulas under the activation its config.json names give the original's
  own outputs (modeling_reference). Naming Hugging Face's exact "gelu"
  instead would miss them by far more than the tolerance."""
  config = modeling.BertConfig.from_json_file(data_file(MODELING_REF + "bert_config.json"))
  assert config.hidden_act == "gelu"  # The original's: the tanh approximation.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join("t%d\n" % n for n in range(config.vocab_size)))
  out = tmp_path / "hf"
  conversion.export_huggingface(config, reference_checkpoint(), str(out), str(vocab), True,
                                "BertForPreTraining")
  with open(out / "config.json") as f:
    hf_config = json.load(f)
  weights = _read_safetensors(str(out / "model.safetensors"))
  inputs, want = reference_inputs(), reference_outputs()
  ids, mask = inputs["input_ids"], inputs["input_mask"].astype(np.float64)
  real = inputs["input_mask"].astype(bool)

  def forward(hidden_act):
    return hf_forward(weights, "BertForPreTraining", hidden_act, ids, mask,
                      inputs["segment_ids"], sizes=hf_config)
  got = forward(hf_config["hidden_act"])
  np.testing.assert_allclose(got["sequence_output"][real], want["sequence_output"][real],
                             atol=1e-5, rtol=0)
  np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5, rtol=0)
  exact = forward("gelu")
  assert np.abs(exact["sequence_output"][real] - want["sequence_output"][real]).max() > 1e-4


def test_released_format_checkpoint_out_and_back_exactly(tmp_path):
  """Our reference checkpoint (the original's format, several heads) to a
  Hugging Face directory and back: the same tensors, bit for bit."""
  config = modeling.BertConfig.from_json_file(data_file(MODELING_REF + "bert_config.json"))
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join("t%d\n" % n for n in range(config.vocab_size)))
  with pytest.raises(UserError, match="--hf_architecture"):
    conversion.export_huggingface(config, reference_checkpoint(), str(tmp_path / "x"),
                               str(vocab), True)
  assert not os.path.exists(tmp_path / "x")
  conversion.export_huggingface(config, reference_checkpoint(), str(tmp_path / "hf"), str(vocab),
                             True, "BertForPreTraining")
  conversion.import_huggingface(str(tmp_path / "hf"), str(tmp_path / "back" / "bert_model.ckpt"),
                             "original")
  original = tf.train.load_checkpoint(reference_checkpoint())
  back = tf.train.load_checkpoint(str(tmp_path / "back" / "bert_model.ckpt"))
  names = set(back.get_variable_to_shape_map())
  assert len(names) == 46
  for name in names:
    np.testing.assert_array_equal(back.get_tensor(name), original.get_tensor(name))


# ----------------------------------------------------------- bad directories


def _bad_directories(root):
  """(directory, what its one error line must say) for each kind of fault."""
  cases = []

  def make(name, architecture="BertForSequenceClassification", **kwargs):
    return write_hf_directory(os.path.join(root, name), architecture, **kwargs)

  cases.append((make("roberta", config_changes={"model_type": "roberta"}),
                ["config.json", "model_type", "roberta"]))
  cases.append((make("relative", config_changes={"position_embedding_type": "relative_key"}),
                ["position_embedding_type", "relative_key"]))
  cases.append((make("swish", hidden_act="swish"), ["hidden_act", "swish", "gelu_new"]))
  cases.append((make("decoder", config_changes={"is_decoder": True}), ["is_decoder"]))
  cases.append((make("eps", config_changes={"layer_norm_eps": 1e-5}), ["layer_norm_eps"]))
  missing = hf_weights("BertForSequenceClassification")
  del missing["bert.encoder.layer.1.attention.self.key.weight"]
  cases.append((make("missing", weights=missing),
                ["model.safetensors", "bert.encoder.layer.1.attention.self.key.weight",
                 "missing"]))
  misshapen = hf_weights("BertForSequenceClassification")
  misshapen["bert.encoder.layer.0.intermediate.dense.weight"] = np.zeros((7, 16), np.float32)
  cases.append((make("shape", weights=misshapen),
                ["bert.encoder.layer.0.intermediate.dense.weight", "[7, 16]", "[20, 16]"]))
  extra = hf_weights("BertForSequenceClassification")
  extra["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = np.zeros(
      (3, 16), np.float32)
  cases.append((make("extra", weights=extra), ["distance_embedding", "no place"]))
  untied = hf_weights("BertForMaskedLM")
  untied["cls.predictions.decoder.weight"] = untied[
      "bert.embeddings.word_embeddings.weight"] + 1.0
  cases.append((make("untied", "BertForMaskedLM", weights=untied),
                ["cls.predictions.decoder.weight", "tie"]))
  accents = make("accents", tokenizer_config={"do_lower_case": True, "strip_accents": False})
  cases.append((accents, ["tokenizer_config.json", "strip_accents"]))
  no_weights = make("no_weights")
  os.remove(os.path.join(no_weights, "model.safetensors"))
  cases.append((no_weights, ["no_weights", "no weights file", "model.safetensors"]))
  damaged = make("damaged")
  with open(os.path.join(damaged, "model.safetensors"), "r+b") as f:
    f.truncate(100)
  cases.append((damaged, ["damaged", "model.safetensors", "copy it again"]))
  os.makedirs(os.path.join(root, "empty"))
  cases.append((os.path.join(root, "empty", "nothing"), ["No checkpoint at"]))
  return cases


def test_bad_directories_each_give_one_line(tmp_path):
  cases = _bad_directories(str(tmp_path))
  results = run_cli_cases("convert_checkpoint.py", [
      ["--input_checkpoint=" + directory, "--output_checkpoint=%s" % (
          tmp_path / "out" / os.path.basename(directory) / "bert_model.ckpt"),
       "--output_format=original"] for directory, _ in cases])
  assert len(results) == len(cases)
  for (_, fragments), result in zip(cases, results):
    assert_one_line_error(result, "convert_checkpoint.py", *fragments)
  assert not os.path.exists(tmp_path / "out")  # Nothing half-written.


def test_pytorch_bin_without_pytorch_says_so(tmp_path):
  if importlib.util.find_spec("torch") is not None:
    pytest.skip("PyTorch is installed here")
  directory = write_hf_directory(tmp_path / "hf", "BertModel")
  os.rename(os.path.join(directory, "model.safetensors"),
            os.path.join(directory, "pytorch_model.bin"))
  with pytest.raises(UserError, match="pytorch_model.bin needs PyTorch"):
    huggingface.read_directory(directory)
