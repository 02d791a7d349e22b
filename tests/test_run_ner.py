"""run_ner.py end to end on a tiny model: it learns a synthetic tagging task,
its eval_results.txt and test_results.txt are the CoNLL scorer's figures for
its predictions.txt (written in each file's scheme), the export finds in raw
text the entities --do_predict found, and bad input is one line."""

import json
import os
import random
import subprocess
import sys

import pytest

from conftest import (REPO_ROOT, assert_one_line_error, data_file, read_eval_results,
                      run_cli_cases, serve_from_fresh_process, shared_path_if_present)
from plumbing.errors import UserError
from tasks.ner import conll
from tasks.ner import metrics

UNCASED = data_file("vocab/bert_uncased_vocab.txt")
PEOPLE = ["john", "mary", "peter", "susan", "david", "laura", "james", "anna"]
SURNAMES = ["smith", "jones", "brown", "garcia", "miller", "wilson"]
PLACES = ["paris", "london", "berlin", "madrid", "tokyo", "cairo", "lima", "oslo"]
FILLER = ["the", "a", "said", "in", "went", "to", "and", "met", "from", "today", "with", "saw"]
CONFIG = {"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "gelu_exact",
          "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
          "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}


def _sentence(rng, length):
  """Words with their IOB2 tags: people (a first name and, half the time, a
  surname: PER), places (LOC), each followed by a filler word."""
  words, tags = [], []
  while len(words) < length:
    roll = rng.random()
    if roll < 0.2:
      words.append(rng.choice(PEOPLE).title())
      tags.append("B-PER")
      if rng.random() < 0.5:
        words.append(rng.choice(SURNAMES).title())
        tags.append("I-PER")
    elif roll < 0.35:
      words.append(rng.choice(PLACES).title())
      tags.append("B-LOC")
    words.append(rng.choice(FILLER))
    tags.append("O")
  return words, tags


def _write(path, sentences, scheme):
  with open(path, "w", encoding="utf-8") as f:
    f.write("-DOCSTART- -X- -X- O\n\n")
    for words, tags in sentences:
      for word, tag in zip(words, conll.from_iob2(tags, scheme)):
        f.write("%s NNP B-NP %s\n" % (word, tag))
      f.write("\n")


def _data(directory):
  rng = random.Random(5)
  os.makedirs(directory)
  train = [_sentence(rng, rng.randint(3, 12)) for _ in range(600)]
  dev = [_sentence(rng, rng.randint(3, 12)) for _ in range(60)]
  test = [_sentence(rng, rng.randint(3, 12)) for _ in range(40)]
  test.append(_sentence(rng, 90))  # Longer than a sequence: several windows.
  _write(os.path.join(directory, "train.txt"), train, "IOB2")
  _write(os.path.join(directory, "dev.txt"), dev, "IOB1")
  _write(os.path.join(directory, "test.txt"), test, "BIOES")
  return test


def _read_results(path):
  return {k: float(v) for k, v in read_eval_results(path).items()}


def test_learns_tags_scores_as_conlleval_and_exports(tmp_path):
  data_dir = str(tmp_path / "data")
  test = _data(data_dir)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(CONFIG))
  output_dir = tmp_path / "out"
  export_dir = tmp_path / "export"
  result = subprocess.run(
      [sys.executable, "run_ner.py", "--do_train", "--do_eval", "--do_predict",
       "--data_dir=" + data_dir, "--vocab_file=" + UNCASED, "--bert_config_file=%s" % config,
       "--output_dir=%s" % output_dir, "--max_seq_length=32", "--doc_stride=12",
       "--train_batch_size=16", "--learning_rate=3e-3", "--num_train_epochs=4",
       "--eval_batch_size=16", "--predict_batch_size=16", "--export_dir=%s" % export_dir],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert (output_dir / "labels.txt").read_text().split() == [
      "O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
  dev = _read_results(output_dir / "eval_results.txt")
  assert dev["eval_f1"] > 0.9, dev  # Learned (guessing scores far below).
  assert {"eval_f1_PER", "eval_f1_LOC", "eval_loss", "global_step"} <= set(dev)

  # predictions.txt: the test words, their gold tags as read (BIOES), and
  # predictions in BIOES; test_results.txt is the scorer's count of it.
  lines = (output_dir / "predictions.txt").read_text().split("\n\n")
  predicted = [[line.split() for line in block.splitlines()] for block in lines if block]
  assert len(predicted) == len(test)
  for (words, tags), rows in zip(test, predicted):
    assert [r[0] for r in rows] == words
    assert [r[1] for r in rows] == conll.from_iob2(tags, "BIOES")
  counts = metrics.counts_of([[r[1] for r in s] for s in predicted],
                             [[r[2] for r in s] for s in predicted], "BIOES")
  scores = _read_results(output_dir / "test_results.txt")
  assert abs(scores["test_f1"] - metrics.scores(counts)["eval_f1"]) < 1e-9
  assert scores["test_f1"] > 0.9
  conlleval = shared_path_if_present("../tools/conlleval.pl")
  if conlleval:  # The scorer itself, on the IOB2 form it reads.
    iob2 = "".join("".join("%s %s %s\n" % (r[0], g, p) for r, g, p in zip(
        s, conll.to_iob2([r[1] for r in s]), conll.to_iob2([r[2] for r in s]))) + "\n"
        for s in predicted)
    printed = subprocess.run(["perl", conlleval], input=iob2, capture_output=True, text=True,
                             check=True).stdout.splitlines()[1]
    assert "FB1: %6.2f" % (100 * scores["test_f1"]) in printed, printed

  # The export, on the raw test sentences, tags every word as --do_predict did
  # and reports its entities at their places in the text.
  texts = [" ".join(words) for words, _ in test]
  out = serve_from_fresh_process(export_dir, text=texts)
  for i, rows in enumerate(predicted):
    tags = [t for t in out["tags"][i] if t]
    assert tags == conll.to_iob2([r[2] for r in rows]), i
    assert [w for w in out["words"][i] if w] == [r[0] for r in rows]
    for k in range(out["num_entities"][i]):
      start, end = out["entity_start"][i][k], out["entity_end"][i][k]
      assert texts[i][start:end] == out["entity_text"][i][k]
      assert out["entity_type"][i][k] in ("PER", "LOC")
      assert 0 < out["entity_score"][i][k] <= 1
  entities = sum(out["num_entities"])
  assert entities == sum(counts.found.values())


def test_bad_input_is_one_line(tmp_path):
  bad, no_dev = tmp_path / "bad", tmp_path / "no_dev"
  for directory, train in ((bad, "John B-PER\nsaid\n"), (no_dev, "John B-PER\nsaid O\n")):
    directory.mkdir()
    (directory / "train.txt").write_text(train)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(CONFIG))
  base = ["--vocab_file=" + UNCASED, "--bert_config_file=%s" % config, "--max_seq_length=32"]
  bad_line, missing_dev, bad_stride = run_cli_cases("run_ner.py", [
      base + ["--data_dir=%s" % bad, "--do_train", "--output_dir=%s" % (tmp_path / "a")],
      base + ["--data_dir=%s" % no_dev, "--do_eval", "--output_dir=%s" % (tmp_path / "b")],
      base + ["--data_dir=%s" % no_dev, "--do_train", "--doc_stride=0",
              "--output_dir=%s" % (tmp_path / "c")]])
  for result, fragment in ((bad_line, "train.txt:2: expected a word and its tag"),
                           (missing_dev, "has no dev file"), (bad_stride, "--doc_stride=0")):
    assert_one_line_error(result, "run_ner.py", fragment)
  assert not os.path.exists(tmp_path / "a" / "train.tf_record")


def test_tensorflow_datasets_without_network_says_what_to_do(tmp_path, monkeypatch):
  """--data_dir=tfds offline (tensorflow-datasets' own retries, about three
  minutes here, are cut short by failing its download at once)."""
  tfds = pytest.importorskip("tensorflow_datasets")
  import requests  # pylint: disable=g-import-not-at-top
  from tasks.ner import task as ner_task  # pylint: disable=g-import-not-at-top

  def offline(*args, **kwargs):
    raise requests.exceptions.ConnectionError("Failed to resolve 'www.clips.uantwerpen.be'")
  monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", offline)
  with pytest.raises(UserError, match=r"--data_dir=tfds: tensorflow-datasets could not download "
                     r"conll2003 \(no network\?\)\. Pass --data_dir=<a directory of CoNLL "
                     r"files> instead.*--tfds_manual_dir"):
    ner_task.tfds_sentences("train", data_dir=str(tmp_path))
