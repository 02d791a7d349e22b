"""keras-hub presets in and out (modeling/checkpoints/keras_hub*.py), checked
against keras-hub itself (requirements/test.txt installs it).

keras-hub makes presets here from its own classes (tiny, seeded weights
drawn large enough that the GELU's two forms and the layer-norm epsilons
differ well beyond the tolerance); they convert to ours with keras-hub's
outputs (float32, within 1e-5), and ours convert to presets that its
`from_preset` loads without a warning, with the same outputs and the same
files, group for group, as its own `save_to_preset` writes of them. Our
side of the reference is the original's own outputs (modeling_reference)
and a classifier fine-tuned here, whose test predictions keras-hub's
classifier gives again from raw text. Where keras-hub computes a model
otherwise, the conversion stops in one line, and --keras_hub_nearest logs
the largest difference that keras-hub's own outputs show.
"""

import json
import os
import re
import subprocess
import sys
import warnings

import h5py
import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from conftest import (MODELING_REF, REPO_ROOT, assert_one_line_error, data_file,
                      reference_checkpoint, reference_inputs, reference_outputs, run_cli_cases)
import modeling
from modeling import bert_model
from modeling import heads
from modeling.checkpoints import conversion
from modeling.checkpoints import keras_hub_gap

# Keras' saving code warns so under NumPy 2 whenever keras-hub saves a preset.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["w%d" % i for i in range(43)]
SIZES = dict(vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16,
             intermediate_dim=32, max_sequence_length=24, num_segments=3)
TOLERANCE = 1e-5


def _inputs():
  rng = np.random.RandomState(3)
  ids = rng.randint(5, len(VOCAB), size=(3, 12)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 8:] = 0
  mask[2, 4:] = 0
  segments = np.zeros_like(ids)
  segments[:, 5:] = 1
  segments[0, 9:] = 2
  return ids, mask, segments


def _randomize(model, seed):
  """Every weight drawn anew (layer-norm scales around 1), large enough for
  the activations to reach where the GELU's forms part."""
  rng = np.random.RandomState(seed)
  values = []
  for weight in model.weights:
    shape = tuple(weight.shape)
    if weight.path.endswith("gamma"):
      values.append(1.0 + rng.normal(0, 0.2, shape))
    else:
      values.append(rng.normal(0, 0.5 if len(shape) > 1 else 0.3, shape))
  model.set_weights([v.astype(np.float32) for v in values])


def _tokenizer(lowercase=True):
  return keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=lowercase,
                                        strip_accents=lowercase)


def _keras_hub_preset(directory, task, seed=1, **task_args):
  """A preset keras-hub writes of `task` (backbone, text_classifier,
  text_embedder, masked_lm) with seeded weights; returns the model."""
  keras.utils.set_random_seed(seed)
  backbone = keras_hub.models.BertBackbone(**SIZES)
  tokenizer = _tokenizer()
  if task == "backbone":
    model = backbone
  elif task == "text_classifier":
    model = keras_hub.models.BertTextClassifier(
        backbone, preprocessor=keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=20), **task_args)
  elif task == "text_embedder":
    model = keras_hub.models.BertTextEmbedder(
        backbone, preprocessor=keras_hub.models.BertTextEmbedderPreprocessor(
            tokenizer, sequence_length=20), **task_args)
  else:
    model = keras_hub.models.BertMaskedLM(
        backbone, preprocessor=keras_hub.models.BertMaskedLMPreprocessor(
            tokenizer, sequence_length=20))
  _randomize(model, seed)
  model.save_to_preset(str(directory))
  if task == "backbone":
    tokenizer.save_to_preset(str(directory))
  return model


def _keras_hub_outputs(model, task, ids, mask, segments):
  """keras-hub's own outputs: [last layer at real tokens, pooled] of a
  backbone, else the task's one output."""
  x = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}
  if task == "masked_lm":
    x["mask_positions"] = np.tile(np.arange(ids.shape[1], dtype=np.int32), (len(ids), 1))
  out = model(x)
  if task == "backbone":
    return [np.asarray(out["sequence_output"])[mask.astype(bool)],
            np.asarray(out["pooled_output"])]
  if task == "masked_lm":
    return [np.asarray(out)[mask.astype(bool)]]
  return [np.asarray(out)]


def _our_model(directory):
  """Our model of the checkpoint in `directory` (released layout)."""
  config = modeling.BertConfig.from_json_file(os.path.join(directory, "bert_config.json"))
  prefix = os.path.join(directory, "bert_model.ckpt")
  shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                   heads.build(config, heads.in_checkpoint(shapes)))
  modeling.load_checkpoint(model, prefix, log=False)
  return model


def _embedding(sequence, mask, pooling, normalize):
  """BertTextEmbedder's pooling, written from its docstring."""
  mask = mask.astype(bool)[:, :, None]
  if pooling == "cls":
    pooled = sequence[:, 0]
  elif pooling == "max":
    pooled = np.where(mask, sequence, -np.inf).max(1)
  else:
    pooled = (sequence * mask).sum(1) / mask.sum(1)
  return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True) if normalize else pooled


def _our_outputs(model, task, ids, mask, segments, pooling="mean", normalize=True):
  inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
  encoded = model.bert(inputs, training=False)
  sequence = encoded["sequence_output"].numpy()
  if task == "backbone":
    return [sequence[mask.astype(bool)], encoded["pooled_output"].numpy()]
  if task == "text_classifier":
    return [model(inputs, training=False)["logits"].numpy()]
  if task == "text_embedder":
    return [_embedding(sequence, mask, pooling, normalize)]
  inputs["masked_lm_positions"] = np.tile(np.arange(ids.shape[1], dtype=np.int32),
                                          (len(ids), 1))
  logits = model(inputs, training=False)["masked_lm_logits"].numpy()
  return [logits.reshape(ids.shape + (-1,))[mask.astype(bool)]]


def _assert_close(got, want):
  assert len(got) == len(want)
  for a, b in zip(got, want):
    np.testing.assert_allclose(a, b, atol=TOLERANCE, rtol=0)


def _load(cls, preset, **kwargs):
  """`cls.from_preset`, failing on any warning (a skipped or mismatched
  weight is one)."""
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    return cls.from_preset(str(preset), **kwargs)


_CLASSES = {"backbone": keras_hub.models.BertBackbone,
            "text_classifier": keras_hub.models.BertTextClassifier,
            "text_embedder": keras_hub.models.BertTextEmbedder,
            "masked_lm": keras_hub.models.BertMaskedLM}
# Names Keras draws from a counter per process (models, the attention's
# dropout and softmax, the optimizer: `bert_backbone_1` for the second
# backbone a process makes): never read back, compared without the count.
_COUNTED = re.compile(r"^(bert_\w+?|dropout|softmax|adam)(_\d+)?$")


def _uncounted(value):
  """`value` (JSON) with every counted "name" as a fresh process gives it."""
  if isinstance(value, dict):
    return {k: (_COUNTED.sub(r"\1", v) if k == "name" and isinstance(v, str) else _uncounted(v))
            for k, v in value.items()}
  return value


def _files(directory):
  """Every file of a preset as what it holds: JSON as values, HDF5 as its
  groups (name attributes) and datasets (shape, dtype), text as text."""
  found = {}
  for root, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      relative = os.path.relpath(path, directory)
      if name.endswith(".h5"):
        items = {}
        with h5py.File(path, "r") as f:
          def visit(key, item, items=items):
            if isinstance(item, h5py.Dataset):
              items[key] = (item.shape, str(item.dtype), dict(item.attrs))
            else:
              items[key] = {k: _COUNTED.sub(r"\1", str(v)) for k, v in item.attrs.items()}
          f.visititems(visit)
        found[relative] = items
      elif name.endswith(".json"):
        with open(path, encoding="utf-8") as f:
          found[relative] = _uncounted(json.load(f))
        found[relative].pop("date_saved", None)
      else:
        with open(path, encoding="utf-8") as f:
          found[relative] = f.read()
  return found


def _assert_written_as_keras_hub_writes(preset, model, tmp_path):
  """The preset's files are those keras-hub's own save_to_preset writes of
  the model it loaded from them: no weight missing or unexpected."""
  again = tmp_path / ("saved_again_" + os.path.basename(str(preset)))
  model.save_to_preset(str(again))
  if isinstance(model, keras_hub.models.BertBackbone):
    _load(keras_hub.models.BertTokenizer, preset).save_to_preset(str(again))
  ours, theirs = _files(preset), _files(again)
  ours.pop("labels.txt", None)  # Ours alone: keras-hub has no place for label names.
  assert ours == theirs


def _convert(*args):
  result = subprocess.run([sys.executable, "convert_checkpoint.py"] + [str(a) for a in args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  return result


# ------------------------------------------------ keras-hub -> ours -> keras-hub


@pytest.mark.parametrize("task,task_args", [
    ("backbone", {}), ("text_classifier", {"num_classes": 3}),
    ("text_embedder", {"pooling_mode": "mean", "normalize": True}),
    ("text_embedder", {"pooling_mode": "max", "normalize": False}),
    ("text_embedder", {"pooling_mode": "cls", "normalize": True}),
])
def test_a_keras_hub_preset_round_trips_through_ours(tmp_path, task, task_args):
  """keras-hub's preset -> ours: keras-hub's outputs; -> a preset again:
  loaded without a warning, the same outputs and the same files."""
  source = tmp_path / "preset"
  model = _keras_hub_preset(source, task, **task_args)
  ids, mask, segments = _inputs()
  want = _keras_hub_outputs(model, task, ids, mask, segments)
  conversion.import_keras_hub(str(source), str(tmp_path / "ours" / "bert_model.ckpt"), "original")
  ours = _our_model(str(tmp_path / "ours"))
  _assert_close(_our_outputs(ours, task, ids, mask, segments,
                             task_args.get("pooling_mode"), task_args.get("normalize")), want)

  back = tmp_path / "back"
  _convert("--input_checkpoint=%s" % (tmp_path / "ours"),
           "--bert_config_file=%s" % (tmp_path / "ours" / "bert_config.json"),
           "--output_checkpoint=%s" % back, "--output_format=keras_hub")
  loaded = _load(_CLASSES[task], back)
  _assert_close(_keras_hub_outputs(loaded, task, ids, mask, segments), want)
  _assert_written_as_keras_hub_writes(back, loaded, tmp_path)
  assert _files(back) == _files(source)  # What keras-hub wrote, file for file.


@pytest.mark.parametrize("pooling,normalize", [("max", True), ("cls", False)])
def test_a_keras_hub_embedder_embeds_the_same_through_embed_py(tmp_path, pooling, normalize):
  """A BertTextEmbedder preset converted to ours: embed.py, given only the
  converted files, pools and normalises as the preset did (the
  sentence-transformers files written beside them) and gives keras-hub's
  vectors for raw text."""
  model = _keras_hub_preset(tmp_path / "preset", "text_embedder", pooling_mode=pooling,
                            normalize=normalize)
  _convert("--input_checkpoint=%s" % (tmp_path / "preset"),
           "--output_checkpoint=%s" % (tmp_path / "ours" / "bert_model.ckpt"),
           "--output_format=original")
  texts = ["w1 w2 w3", "W7, w9! w12 w30 w31 w40", "w5"]
  (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
  ours = tmp_path / "ours"
  result = subprocess.run(
      [sys.executable, "embed.py", "--input_file=%s" % (tmp_path / "texts.txt"),
       "--output_file=%s" % (tmp_path / "vectors.npy"), "--vocab_file=%s" % (ours / "vocab.txt"),
       "--bert_config_file=%s" % (ours / "bert_config.json"),
       "--init_checkpoint=%s" % (ours / "bert_model.ckpt")],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "--pooling=%s" % pooling in result.stderr and "--max_seq_length=20" in result.stderr
  np.testing.assert_allclose(np.load(tmp_path / "vectors.npy"),
                             model.predict(texts, verbose=0), atol=TOLERANCE, rtol=0)

  # The sentence-transformers files alone (as an embedding fine-tuning run
  # records them, with no preset's record) make the same embedder again.
  (ours / "keras_hub_task.json").unlink()
  _convert("--input_checkpoint=%s" % (ours / "bert_model.ckpt"),
           "--bert_config_file=%s" % (ours / "bert_config.json"),
           "--output_checkpoint=%s" % (tmp_path / "back"), "--output_format=keras_hub")
  task = json.loads((tmp_path / "back" / "task.json").read_text())["config"]
  assert (task["pooling_mode"], task["normalize"]) == (pooling, normalize), task
  np.testing.assert_allclose(
      _load(keras_hub.models.BertTextEmbedder, tmp_path / "back").predict(texts, verbose=0),
      model.predict(texts, verbose=0), atol=TOLERANCE, rtol=0)


def test_the_original_s_outputs_reach_keras_hub(tmp_path):
  """The reference checkpoint (the original's own outputs, several heads)
  as a backbone and as a classifier preset: keras-hub gives the original's
  last layer, pooled output and classifier logits."""
  vocab = tmp_path / "vocab.txt"
  config = json.loads(open(data_file(MODELING_REF + "bert_config.json")).read())
  special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  vocab.write_text("".join(t + "\n" for t in special + ["t%d" % n for n in range(
      config["vocab_size"] - len(special))]))
  config_file = data_file(MODELING_REF + "bert_config.json")
  for task in ("backbone", "text_classifier"):
    _convert("--input_checkpoint=" + reference_checkpoint(), "--bert_config_file=" + config_file,
             "--vocab_file=%s" % vocab, "--output_checkpoint=%s" % (tmp_path / task),
             "--output_format=keras_hub", "--keras_hub_task=" + task)
  inputs, want = reference_inputs(), reference_outputs()
  ids, mask, segments = inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"]
  backbone = _load(keras_hub.models.BertBackbone, tmp_path / "backbone")
  _assert_close(_keras_hub_outputs(backbone, "backbone", ids, mask, segments),
                [want["sequence_output"][mask.astype(bool)], want["pooled_output"]])
  classifier = _load(keras_hub.models.BertTextClassifier, tmp_path / "text_classifier")
  _assert_close(_keras_hub_outputs(classifier, "text_classifier", ids, mask, segments),
                [want["classifier_logits"]])
  _assert_written_as_keras_hub_writes(tmp_path / "backbone", backbone, tmp_path)
  _assert_written_as_keras_hub_writes(tmp_path / "text_classifier", classifier, tmp_path)


def test_a_bfloat16_preset_reads_as_its_values(tmp_path):
  """Weights keras-hub saved in bfloat16 (which HDF5 cannot name) come in as
  the same numbers in float32."""
  keras.utils.set_random_seed(2)
  backbone = keras_hub.models.BertBackbone(**SIZES, dtype="bfloat16")
  backbone.save_to_preset(str(tmp_path / "preset"))
  _tokenizer().save_to_preset(str(tmp_path / "preset"))
  conversion.import_keras_hub(str(tmp_path / "preset"), str(tmp_path / "ours" / "bert_model.ckpt"),
                              "original")
  read = tf.train.load_checkpoint(str(tmp_path / "ours" / "bert_model.ckpt"))
  layer = backbone.get_layer("transformer_layer_1")._feedforward_intermediate_dense  # pylint: disable=protected-access
  for name, weight in (("bert/pooler/dense/kernel", backbone.get_layer("pooled_dense").kernel),
                       ("bert/encoder/layer_1/intermediate/dense/bias", layer.bias)):
    want = np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(weight, "float32")))
    assert read.get_tensor(name).dtype == np.float32
    np.testing.assert_array_equal(read.get_tensor(name), want)


def test_the_tokenizer_written_splits_as_ours(tmp_path):
  """The preset's BertTokenizer gives the ids our FullTokenizer gives, for
  the released vocabulary, lower-cased and cased (ß apart: keras-hub
  case-folds it to ss, the original's lower-casing keeps it)."""
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  vocab_file = data_file("vocab/bert_uncased_vocab.txt")
  texts = ["Héllo, Wörld! It's 3.5% off—today.", "Café naïve résumé ÉCOLE",
           "北京欢迎你 and 東京", "don't stop-believing... ok?", "  spaces\tand\ttabs  "]
  config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 8, "type_vocab_size": 2}
  (tmp_path / "bert_config.json").write_text(json.dumps(config))
  modeling.save_original_checkpoint(bert_model.BertModel(modeling.BertConfig.from_dict(config)),
                                    str(tmp_path / "bert_model.ckpt"))
  for lower in (True, False):
    _convert("--input_checkpoint=%s" % (tmp_path / "bert_model.ckpt"),
             "--bert_config_file=%s" % (tmp_path / "bert_config.json"),
             "--vocab_file=" + vocab_file, "--do_lower_case=%s" % lower,
             "--output_checkpoint=%s" % (tmp_path / str(lower)), "--output_format=keras_hub",
             "--keras_hub_task=backbone")
    theirs = _load(keras_hub.models.BertTokenizer, tmp_path / str(lower))
    ours = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
    for text in texts:
      assert np.asarray(theirs(text)).tolist() == ours.convert_tokens_to_ids(
          ours.tokenize(text)), text


def test_a_classifier_fine_tuned_here_predicts_the_same_in_keras_hub(tmp_path):
  """keras-hub's backbone preset -> ours -> run_classifier.py -> a
  BertTextClassifier preset: keras-hub, from the raw test pairs through its
  own preprocessor, gives the probabilities --do_predict wrote."""
  from test_fine_tuning_protocol import write_mrpc  # pylint: disable=g-import-not-at-top
  vocab = open(data_file("vocab/bert_uncased_vocab.txt"), encoding="utf-8").read().splitlines()
  keras.utils.set_random_seed(5)
  backbone = keras_hub.models.BertBackbone(**dict(SIZES, vocabulary_size=len(vocab),
                                                  max_sequence_length=64))
  _randomize(backbone, 5)
  backbone.save_to_preset(str(tmp_path / "preset"))
  keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True, strip_accents=True
                                 ).save_to_preset(str(tmp_path / "preset"))
  _convert("--input_checkpoint=%s" % (tmp_path / "preset"),
           "--output_checkpoint=%s" % (tmp_path / "bert" / "bert_model.ckpt"),
           "--output_format=original")
  write_mrpc(tmp_path / "MRPC")
  bert = tmp_path / "bert"
  result = subprocess.run(
      [sys.executable, "run_classifier.py", "--task_name=MRPC", "--do_train=true",
       "--do_predict=true", "--data_dir=%s" % (tmp_path / "MRPC"),
       "--vocab_file=%s" % (bert / "vocab.txt"), "--bert_config_file=%s" % (
           bert / "bert_config.json"), "--init_checkpoint=%s" % (bert / "bert_model.ckpt"),
       "--max_seq_length=32", "--learning_rate=1e-3",
       "--output_dir=%s" % (tmp_path / "run")],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  _convert("--input_checkpoint=%s" % (tmp_path / "run"),
           "--bert_config_file=%s" % (bert / "bert_config.json"),
           "--output_checkpoint=%s" % (tmp_path / "fine_tuned"), "--output_format=keras_hub")
  classifier = _load(keras_hub.models.BertTextClassifier, tmp_path / "fine_tuned")
  _assert_written_as_keras_hub_writes(tmp_path / "fine_tuned", classifier, tmp_path)
  assert classifier.preprocessor.sequence_length == 32  # The run's --max_seq_length.
  assert (tmp_path / "fine_tuned" / "labels.txt").read_text() == "0\n1\n"
  rows = [line.split("\t") for line in
          (tmp_path / "MRPC" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]]
  logits = classifier.predict(([r[3] for r in rows], [r[4] for r in rows]), verbose=0)
  want = np.loadtxt(tmp_path / "run" / "test_results.tsv", delimiter="\t")
  np.testing.assert_allclose(tf.nn.softmax(logits).numpy(), want, atol=TOLERANCE, rtol=0)
  assert np.abs(want[:, 0] - want[0, 0]).max() > 0.05  # The pairs' answers differ.


# ------------------------------------------------ what keras-hub computes otherwise


def _gap_in_log(stderr):
  """The largest difference --keras_hub_nearest logged."""
  (value,) = re.findall(r"tokens: ([-+.e0-9]+)\.\s*$", stderr, re.M)
  return float(value)


def _reference_vocab(directory):
  config = json.loads(open(data_file(MODELING_REF + "bert_config.json")).read())
  special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  path = directory / "vocab.txt"
  path.write_text("".join(t + "\n" for t in special + ["t%d" % n for n in range(
      config["vocab_size"] - len(special))]))
  return path


def test_inexact_cases_stop_in_one_line_or_log_the_difference_keras_hub_shows(tmp_path):
  """The exact GELU in the backbone and the original's masked-LM head each
  way: without --keras_hub_nearest one error line and nothing written;
  with it, the largest difference logged is the one keras-hub's own
  outputs show against ours on the inputs it was measured on."""
  vocab = _reference_vocab(tmp_path)
  exact = tmp_path / "exact"
  exact.mkdir()
  config = json.loads(open(data_file(MODELING_REF + "bert_config.json")).read())
  (exact / "bert_config.json").write_text(json.dumps(dict(config, hidden_act="gelu_exact")))
  _keras_hub_preset(tmp_path / "mlm_preset", "masked_lm")
  reference = ["--input_checkpoint=" + reference_checkpoint(), "--vocab_file=%s" % vocab]
  cases = {
      "exact": reference[:1] + ["--vocab_file=%s" % vocab,
                                "--bert_config_file=%s" % (exact / "bert_config.json"),
                                "--output_format=keras_hub", "--keras_hub_task=backbone"],
      "embedder": reference[:1] + ["--vocab_file=%s" % vocab,
                                   "--bert_config_file=%s" % (exact / "bert_config.json"),
                                   "--output_format=keras_hub", "--keras_hub_task=text_embedder",
                                   "--keras_hub_pooling=max", "--nokeras_hub_normalize"],
      "masked_lm": reference + ["--bert_config_file=" + data_file(
          MODELING_REF + "bert_config.json"), "--output_format=keras_hub",
                                "--keras_hub_task=masked_lm"],
      "import": ["--input_checkpoint=%s" % (tmp_path / "mlm_preset"),
                 "--output_format=original"],
  }
  out = {name: tmp_path / ("out_" + name) / ("bert_model.ckpt" if name == "import" else "")
         for name in cases}
  args = [cases[n] + ["--output_checkpoint=%s" % out[n]] for n in cases]
  results = run_cli_cases("convert_checkpoint.py", args + [a + ["--keras_hub_nearest"]
                                                           for a in args])
  for (name, stopped), nearest in zip(zip(cases, results), results[len(cases):]):
    assert_one_line_error(stopped, "convert_checkpoint.py", "--keras_hub_nearest",
                          "1e-5" if "masked_lm" in name or name == "import" else "exact GELU")
    assert nearest.returncode == 0, nearest.stderr[-3000:]
    cases[name] = _gap_in_log(nearest.stderr)

  # What keras-hub itself shows on the measured inputs.
  model_config = modeling.BertConfig.from_dict(config)
  sample = keras_hub_gap.sample_inputs(model_config)
  ids, mask, segments = sample["input_ids"], sample["input_mask"], sample["segment_ids"]
  ours = bert_model.BertWithHeads(bert_model.BertModel(modeling.BertConfig.from_dict(
      dict(config, hidden_act="gelu_exact"))), [])
  modeling.load_checkpoint(ours, reference_checkpoint(), log=False)
  theirs = _load(keras_hub.models.BertBackbone, out["exact"])
  shown = max(np.abs(a - b).max() for a, b in zip(
      _keras_hub_outputs(theirs, "backbone", ids, mask, segments),
      _our_outputs(ours, "backbone", ids, mask, segments)))
  assert shown > 10 * TOLERANCE  # Far beyond the tolerance.
  np.testing.assert_allclose(cases["exact"], shown, rtol=1e-2, atol=TOLERANCE)
  theirs = _load(keras_hub.models.BertTextEmbedder, out["embedder"], preprocessor=None)
  assert theirs.pooling_mode == "max" and not theirs.normalize
  shown = np.abs(_keras_hub_outputs(theirs, "text_embedder", ids, mask, segments)[0] -
                 _our_outputs(ours, "text_embedder", ids, mask, segments, "max", False)[0]).max()
  assert shown > 10 * TOLERANCE
  np.testing.assert_allclose(cases["embedder"], shown, rtol=1e-2, atol=TOLERANCE)

  ours = _our_model_of(reference_checkpoint(), config)
  theirs = _load(keras_hub.models.BertMaskedLM, out["masked_lm"], preprocessor=None)
  shown = np.abs(_keras_hub_outputs(theirs, "masked_lm", ids, mask, segments)[0] -
                 _our_outputs(ours, "masked_lm", ids, mask, segments)[0]).max()
  assert shown > 10 * TOLERANCE
  np.testing.assert_allclose(cases["masked_lm"], shown, rtol=1e-2, atol=TOLERANCE)

  imported = _our_model(str(out["import"].parent))
  sample = keras_hub_gap.sample_inputs(imported.config)
  ids, mask, segments = sample["input_ids"], sample["input_mask"], sample["segment_ids"]
  theirs = _load(keras_hub.models.BertMaskedLM, tmp_path / "mlm_preset", preprocessor=None)
  shown = np.abs(_keras_hub_outputs(theirs, "masked_lm", ids, mask, segments)[0] -
                 _our_outputs(imported, "masked_lm", ids, mask, segments)[0]).max()
  assert shown > 10 * TOLERANCE
  np.testing.assert_allclose(cases["import"], shown, rtol=1e-2, atol=TOLERANCE)
  # The encoder itself came over exactly.
  _assert_close(_our_outputs(imported, "backbone", ids, mask, segments),
                _keras_hub_outputs(theirs.backbone, "backbone", ids, mask, segments))


def _our_model_of(checkpoint, config):
  config = modeling.BertConfig.from_dict(config)
  model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                   heads.build(config, {"masked_lm": True}))
  modeling.load_checkpoint(model, checkpoint, log=False)
  return model


# ------------------------------------------------ what cannot convert


def _edit_json(path, edit):
  value = json.loads(path.read_text())
  edit(value)
  path.write_text(json.dumps(value, indent=4))


def _edit_h5(path, edit):
  with h5py.File(path, "r+") as f:
    edit(f)


def _bad_presets(root):
  """(directory, what its one error line must say) for each kind of fault
  in a preset."""
  cases = []

  def make(name, task="text_classifier", **task_args):
    directory = root / name
    _keras_hub_preset(directory, task, **(task_args or (
        {"num_classes": 2} if task == "text_classifier" else {})))
    return directory

  other = make("roberta", "backbone")
  _edit_json(other / "config.json", lambda c: c.update(registered_name="keras_hub>RobertaBackbone"))
  cases.append((other, ["config.json", "RobertaBackbone"]))
  quantized = make("int8", "backbone")
  _edit_json(quantized / "config.json", lambda c: c["config"]["dtype"]["config"].update(
      name="int8_from_float32"))
  cases.append((quantized, ["config.json", "quantized"]))
  causal = make("causal")
  _edit_json(causal / "task.json", lambda c: c.update(registered_name="keras_hub>BertCausalLM",
                                                      class_name="BertCausalLM"))
  cases.append((causal, ["task.json", "BertCausalLM"]))
  accents = make("accents", "backbone")
  _edit_json(accents / "tokenizer.json", lambda c: c["config"].update(lowercase=False,
                                                                      strip_accents=True))
  cases.append((accents, ["tokenizer.json", "strip_accents"]))
  no_head = make("no_head")
  os.remove(no_head / "task.weights.h5")
  cases.append((no_head, ["no_head", "task.weights.h5"]))
  missing = make("missing", "backbone")
  _edit_h5(missing / "model.weights.h5", lambda f: f.__delitem__(
      "layers/transformer_encoder_1/_self_attention_layer/key_dense/vars/0"))
  cases.append((missing, ["model.weights.h5", "transformer_encoder_1", "key_dense",
                          "layer_1/attention/self/key/kernel", "missing"]))
  misshapen = make("misshapen", "backbone")

  def reshape(f):
    del f["layers/dense/vars/1"]
    f["layers/dense/vars/1"] = np.zeros(7, np.float32)
  _edit_h5(misshapen / "model.weights.h5", reshape)
  cases.append((misshapen, ["layers/dense/vars/1", "bert/pooler/dense/bias", "[7]", "[16]"]))
  extra = make("extra", "backbone")
  _edit_h5(extra / "model.weights.h5", lambda f: f["layers/dense/vars"].create_dataset(
      "2", data=np.zeros(3, np.float32)))
  cases.append((extra, ["layers/dense/vars/2", "no place"]))
  damaged = make("damaged", "backbone")
  with open(damaged / "model.weights.h5", "r+b") as f:
    f.truncate(200)
  cases.append((damaged, ["model.weights.h5", "copy it again"]))
  return cases


def test_presets_that_cannot_convert_each_give_one_line(tmp_path):
  cases = _bad_presets(tmp_path)
  out = tmp_path / "out"
  results = run_cli_cases("convert_checkpoint.py", [
      ["--input_checkpoint=%s" % directory, "--output_format=original",
       "--output_checkpoint=%s" % (out / directory.name / "bert_model.ckpt")]
      for directory, _ in cases] + [
          ["--input_checkpoint=%s" % cases[0][0], "--output_format=keras_hub",
           "--output_checkpoint=%s" % (out / "again")]])
  for (_, fragments), result in zip(cases, results):
    assert_one_line_error(result, "convert_checkpoint.py", *fragments)
  assert_one_line_error(results[-1], "convert_checkpoint.py", "preset already")
  assert not out.exists()  # Nothing half-written.


def test_models_keras_hub_cannot_hold_each_give_one_line(tmp_path):
  """Heads without a keras-hub task, an activation it lacks, a vocabulary
  its tokenizer refuses, a directory that is not a preset: one line each,
  nothing written."""
  config = json.loads(open(data_file(MODELING_REF + "bert_config.json")).read())
  vocab = _reference_vocab(tmp_path)
  config_file = data_file(MODELING_REF + "bert_config.json")

  def checkpoint(name, model, extra=None):
    directory = tmp_path / name
    directory.mkdir()
    modeling.save_original_checkpoint(model, str(directory / "bert_model.ckpt"))
    for file_name, text in (extra or {}).items():
      (directory / file_name).write_text(text)
    return directory

  small = modeling.BertConfig.from_dict(config)
  regressor = checkpoint("regressor", bert_model.BertClassifier(small, 1))
  multi = checkpoint("multi", bert_model.BertClassifier(small, 3),
                     {"problem_type.txt": heads.MULTI_LABEL + "\n"})
  squad = checkpoint("squad", bert_model.BertSpanPredictor(small))
  relu = tmp_path / "relu"
  relu.mkdir()
  (relu / "bert_config.json").write_text(json.dumps(dict(config, hidden_act="relu")))
  no_mask = tmp_path / "no_mask.txt"
  no_mask.write_text(vocab.read_text().replace("[MASK]\n", "[MASKED]\n"))
  occupied = tmp_path / "occupied"
  occupied.mkdir()
  (occupied / "notes.txt").write_text("mine")
  cases = [
      (["--input_checkpoint=%s" % regressor], ["one output", "--keras_hub_task=backbone"]),
      (["--input_checkpoint=%s" % multi], ["multi-label"]),
      (["--input_checkpoint=%s" % squad], ["span", "--keras_hub_task=backbone"]),
      (["--input_checkpoint=%s" % squad, "--keras_hub_task=text_classifier"],
       ["--keras_hub_task=text_classifier", "classifier head"]),
      (["--input_checkpoint=" + reference_checkpoint(),
        "--bert_config_file=%s" % (relu / "bert_config.json")], ["hidden_act", "relu"]),
      (["--input_checkpoint=" + reference_checkpoint(), "--vocab_file=%s" % no_mask],
       ["no_mask.txt", "[MASK]"]),
      (["--input_checkpoint=" + reference_checkpoint(), "--keras_hub_task=backbone",
        "--output_checkpoint=%s" % occupied], ["occupied", "not a keras-hub preset"]),
  ]
  args = []
  for n, (case, _) in enumerate(cases):
    given = {a.split("=")[0] for a in case}
    args.append(case + [a for a in ("--bert_config_file=" + config_file,
                                    "--vocab_file=%s" % vocab,
                                    "--output_checkpoint=%s" % (tmp_path / "out" / str(n)))
                        if a.split("=")[0] not in given] + ["--output_format=keras_hub"])
  results = run_cli_cases("convert_checkpoint.py", args)
  for (_, fragments), result in zip(cases, results):
    assert_one_line_error(result, "convert_checkpoint.py", *fragments)
  assert not (tmp_path / "out").exists()
  assert os.listdir(occupied) == ["notes.txt"]
