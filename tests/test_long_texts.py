"""Texts longer than max_seq_length as windows (run_classifier.py
--window_stride): the windows, the same windows in the export's graph, the
windowed model against each window classified alone, and a task whose
label lies past the first window, which truncation cannot learn."""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from conftest import data_file, read_eval_results, reference_config
from data_prep import tokenization
import modeling
from plumbing import tf_example
from serving import export
from serving import packing
from tasks.classification import features
from tasks.classification import windows

from classifier_runs import run_classifier

FILLERS = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "paper", "lamp",
           "tree", "house", "road", "glass", "field", "horse", "bread", "chair", "light",
           "sound", "water"]
KEYS = {"1": "good", "0": "bad"}


@pytest.fixture(scope="module")
def word_vocab(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLERS +
                            list(KEYS.values())) + "\n")
  return str(path)


def _words(prefix, count):
  return [FILLERS[(i + len(prefix)) % len(FILLERS)] for i in range(count)]


def test_long_texts_become_these_windows(word_vocab):
  tokenizer = tokenization.FullTokenizer(word_vocab, do_lower_case=True)
  settings = windows.WindowSettings(stride=3, max_windows=8)
  a, b = _words("a", 6), _words("bb", 10)
  # A single text of 10 words at max_seq_length 8: bodies of 6 every 3 words.
  rows, cut = windows.window_rows(tokenizer, " ".join(b), None, 8, settings)
  assert [t for t, _ in rows] == [["[CLS]"] + b[s:s + 6] + ["[SEP]"] for s in (0, 3)] + [
      ["[CLS]"] + b[6:10] + ["[SEP]"]]
  assert not cut
  # A pair that does not fit in 12: A cut to 4 ((12 - 3) // 2) in every
  # window, B sliding in bodies of 5.
  rows, _ = windows.window_rows(tokenizer, " ".join(a), " ".join(b), 12, settings)
  expected = [(0, 5), (3, 8), (6, 10)]
  assert [t for t, _ in rows] == [
      ["[CLS]"] + a[:4] + ["[SEP]"] + b[s:e] + ["[SEP]"] for s, e in expected]
  assert [s for _, s in rows] == [[0] * 6 + [1] * (e - s + 1) for s, e in expected]
  # Cut after two windows.
  rows, cut = windows.window_rows(tokenizer, " ".join(a), " ".join(b), 12,
                                  windows.WindowSettings(stride=3, max_windows=2))
  assert len(rows) == 2 and cut


def test_what_fits_keeps_the_original_features():
  tokenizer = tokenization.FullTokenizer(data_file("vocab/bert_uncased_vocab.txt"), True)
  settings = windows.WindowSettings(stride=4, max_windows=3)
  cases = [("", None), ("A short sentence.", None), ("Hello there", "General Kenobi!"),
           # A longer than half of the space, but the pair fits: A whole.
           ("one two three four five six seven eight nine ten eleven", "yes")]
  for i, (a, b) in enumerate(cases):
    example = features.InputExample("x-%d" % i, a, b, "1")
    original = features.convert_single_example(5, example, ["0", "1"], 16, tokenizer)
    windowed, cut = windows.convert_windowed_example(example, ["0", "1"], 16, tokenizer,
                                                     settings)
    assert not cut
    for name in ("input_ids", "input_mask", "segment_ids"):
      value = np.array(getattr(windowed, name))
      assert value.shape == (3, 16)
      np.testing.assert_array_equal(value[0], getattr(original, name))
      assert not value[1:].any()
    assert windowed.label_id == original.label_id == 1


STRESS = [("", ""), ("Hello, world!", ""), (" ".join(["Tokenization"] * 40), ""),
          ("Is this about 東京 and café?", " ".join("passage word %d\u0007." % i for i in range(30))),
          (" ".join("a long first text %d" % i for i in range(12)), "b " * 40),
          ("x", "   "), ("naïve résumé " * 10, "\u00adsoft\u200bhyphen"),
          ("😀 emoji " * 20, "y")]


@pytest.mark.parametrize("seq,stride,max_windows", [(16, 5, 4), (20, 1, 40), (32, 64, 3)])
def test_the_export_graph_makes_the_same_windows(seq, stride, max_windows):
  vocab = data_file("vocab/bert_uncased_vocab.txt")
  tokenizer = tokenization.FullTokenizer(vocab, True)
  graph = export.graph_tokenizer(vocab, True)
  settings = windows.WindowSettings(stride, max_windows)
  for pair in (False, True):
    text_a = [a for a, _ in STRESS]
    text_b = [b for _, b in STRESS]
    packed = packing.pack_windows(
        graph.tokenize_to_ids(tf.constant(text_a)),
        graph.tokenize_to_ids(tf.constant(text_b)) if pair else None,
        seq, graph.cls_id, graph.sep_id, stride, max_windows)
    count = packed["input_ids"].shape[1]
    assert count > 1
    for i, (a, b) in enumerate(zip(text_a, text_b)):
      example = features.InputExample("x-%d" % i, a, b if pair else None, "0")
      windowed, _ = windows.convert_windowed_example(example, ["0", "1"], seq, tokenizer,
                                                     settings)
      for name in ("input_ids", "input_mask", "segment_ids"):
        python = np.array(getattr(windowed, name))
        np.testing.assert_array_equal(packed[name][i].numpy(), python[:count],
                                      err_msg="%s, example %d" % (name, i))
        assert not python[count:].any()


def _window_inputs(rng, batch, count, seq, present):
  ids = rng.integers(5, 99, (batch, count, seq)).astype(np.int32)
  lengths = rng.integers(2, seq + 1, (batch, count))
  mask = (np.arange(seq) < lengths[..., None]).astype(np.int32) * present[..., None]
  segments = ((np.arange(seq) >= lengths[..., None] // 2) & (mask > 0)).astype(np.int32)
  return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments}


def test_window_logits_combine_each_window_classified_alone():
  config = reference_config()
  classifier = modeling.BertClassifier(config, num_labels=3)
  rng = np.random.default_rng(0)
  present = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]])
  inputs = _window_inputs(rng, 4, 4, 24, present)
  # Each present window alone through the plain classifier.
  alone = np.zeros((4, 4, 3), np.float32)
  for i, j in zip(*np.nonzero(present)):
    row = {k: v[i:i + 1, j] for k, v in inputs.items()}
    alone[i, j] = classifier(row, training=False)["logits"].numpy()[0]
  for pooling in ("mean", "max"):
    for gather in (True, False):
      model = modeling.BertWindowClassifier(config, 3, pooling=pooling, gather_windows=gather)
      model(inputs)
      model.set_weights(classifier.get_weights())
      out = model(dict(inputs, label_ids=np.array([0, 1, 2, 0])), training=False)
      for i in range(4):
        real = alone[i][present[i] > 0]
        expected = (np.zeros(3) if not len(real) else
                    real.mean(axis=0) if pooling == "mean" else real.max(axis=0))
        np.testing.assert_allclose(out["logits"][i], expected, atol=1e-5,
                                   err_msg="%s, gather %s, text %d" % (pooling, gather, i))
      np.testing.assert_allclose(out["window_logits"].numpy()[present > 0],
                                 alone[present > 0], atol=1e-5)
      log_probs = np.log(np.exp(expected) / np.exp(expected).sum())
      assert float(out["per_example_loss"][3]) == pytest.approx(-log_probs[0], abs=1e-5)
      # Trimmed to the longest row, as the input pipeline does: the same.
      trimmed = model(tf_example.trim_padding(inputs, 8), training=False)["logits"]
      np.testing.assert_allclose(trimmed, out["logits"], atol=1e-5)


def _long_text(rng, label):
  """60-100 filler words with the label's word somewhere past the 40th."""
  words = [rng.choice(FILLERS) for _ in range(rng.randint(60, 100))]
  words.insert(rng.randint(40, len(words)), KEYS[label])
  return " ".join(words)


def _write_task(directory, seed=0):
  rng = random.Random(seed)
  os.makedirs(directory)
  for name, count in (("train", 400), ("dev", 100)):
    with open(os.path.join(directory, name + ".tsv"), "w") as f:
      f.write("sentence\tlabel\n")
      for i in range(count):
        f.write("%s\t%d\n" % (_long_text(rng, str(i % 2)), i % 2))
  test_texts = [_long_text(rng, str(i % 2)) for i in range(16)]
  with open(os.path.join(directory, "test.tsv"), "w") as f:
    f.write("index\tsentence\n")
    f.writelines("%d\t%s\n" % (i, t) for i, t in enumerate(test_texts))
  return test_texts


def _accuracy(output_dir):
  return float(read_eval_results(os.path.join(output_dir, "eval_results.txt"))["eval_accuracy"])


def test_windows_learn_a_label_that_truncation_never_sees(word_vocab, tmp_path):
  """The label's word always lies past the first 30 tokens, so a truncating
  classifier sees nothing but fillers: at best a guess. Windows of 30 tokens
  every 15 see it."""
  data_dir = str(tmp_path / "data")
  test_texts = _write_task(data_dir)
  config = tmp_path / "config.json"
  config.write_text(json.dumps({
      "vocab_size": len(FILLERS) + 7, "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "gelu",
      "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
      "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}))
  common = ["--task_name=SST-2", "--data_dir=" + data_dir, "--vocab_file=" + word_vocab,
            "--bert_config_file=%s" % config, "--max_seq_length=32", "--train_batch_size=16",
            "--learning_rate=1e-3", "--num_train_epochs=20", "--iterations_per_loop=100",
            "--do_train", "--do_eval"]
  truncated, windowed = str(tmp_path / "truncated"), str(tmp_path / "windowed")
  result = run_classifier(common + ["--output_dir=" + truncated])
  assert result.returncode == 0, result.stderr[-3000:]
  export_dir = str(tmp_path / "export")
  result = run_classifier(common + [
      "--output_dir=" + windowed, "--window_stride=15", "--max_windows=8", "--do_predict",
      "--export_dir=" + export_dir])
  assert result.returncode == 0, result.stderr[-3000:]
  assert "400 of 400 examples longer than one window; 0 cut" in result.stderr
  assert _accuracy(truncated) <= 0.7
  assert _accuracy(windowed) >= 0.95

  # The export cuts raw text into the same windows: its probabilities are
  # the run's test_results.tsv, and it holds no XLA-compiled function.
  assert export.xla_functions(export_dir) == []
  loaded = tf.saved_model.load(export_dir)
  served = loaded.signatures["serving_default"](text_a=tf.constant(test_texts))
  predicted = np.loadtxt(os.path.join(windowed, "test_results.tsv"))
  np.testing.assert_allclose(served["probabilities"].numpy(), predicted, atol=1e-5)
  assert served["label"].numpy().tolist() == [
      str(i % 2).encode() for i in range(len(test_texts))]
  # serve_features takes [batch, windows, seq] of any window count.
  tokenized = loaded.signatures["tokenize"](text_a=tf.constant(test_texts[:3]))
  assert tokenized["input_ids"].shape[1] > 1
  again = loaded.signatures["serve_features"](**tokenized)
  np.testing.assert_allclose(again["probabilities"], predicted[:3], atol=1e-5)
