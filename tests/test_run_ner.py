"""run_ner.py end to end on a tiny model: it learns a synthetic tagging task,
its eval_results.txt and test_results.txt are the CoNLL scorer's figures for
its predictions.txt (written in each file's scheme), the export finds in raw
text the entities --do_predict found, --predict_file finds in raw text lines
the entities the export finds (punctuation apart), and bad input is one
line."""

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
FILLER = ["the", "a", "said", "in", "went", "to", "and", "met", "from", "today", "with", "saw",
          ",", ".", "(", ")", "!", ":", '"']  # Punctuation its own token, as CoNLL's.
CONFIG = {"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "gelu_exact",
          "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
          "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}


def _sentence(rng, length):
  """Words with their IOB2 tags: people (a first name and, half the time, a
  surname: PER), places (LOC), each followed by a filler word or a
  punctuation mark (O)."""
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


def _raw_texts():
  """Raw text lines: punctuation against names, spaces, Unicode, an empty
  line, and a line of about 3,000 characters (many windows)."""
  rng = random.Random(9)
  long_line = ""
  while len(long_line) < 3000:
    words, _ = _sentence(rng, rng.randint(3, 12))
    long_line += " ".join(words) + rng.choice([". ", ", ", "! ", " (Oslo). ", "\t"])
  return ["John Smith went to Paris.", "Mary met Peter Jones in Berlin, Madrid and Tokyo.",
          "(Lima).", "", "  Susan   said:\t\"Cairo!\"  ", "Anna Garcia 😀 saw Oslo—today.",
          long_line, "Laura Miller, David Brown and James Wilson met in London (Lima)."]


def _entities(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _read_results(path):
  return {k: float(v) for k, v in read_eval_results(path).items()}


def test_learns_tags_scores_as_conlleval_and_exports(tmp_path):
  data_dir = str(tmp_path / "data")
  test = _data(data_dir)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(CONFIG))
  output_dir = tmp_path / "out"
  export_dir = tmp_path / "export"
  raw_texts = _raw_texts()
  raw_file = tmp_path / "texts.txt"
  raw_file.write_text("".join(text + "\n" for text in raw_texts), encoding="utf-8")
  result = subprocess.run(
      [sys.executable, "run_ner.py", "--do_train", "--do_eval", "--do_predict",
       "--data_dir=" + data_dir, "--vocab_file=" + UNCASED, "--bert_config_file=%s" % config,
       "--output_dir=%s" % output_dir, "--max_seq_length=32", "--doc_stride=12",
       "--train_batch_size=16", "--learning_rate=3e-3", "--num_train_epochs=4",
       "--eval_batch_size=16", "--predict_batch_size=16", "--export_dir=%s" % export_dir,
       "--predict_file=%s" % raw_file],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert (output_dir / "labels.txt").read_text().split() == [
      "O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
  # Its training words have every punctuation mark apart: raw text is cut so.
  assert (output_dir / "raw_text_words.txt").read_text() == "basic\n"
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

  # --predict_file: per line, the entities the export finds in it, none
  # taking in the punctuation beside it.
  found = _entities(output_dir / "entities.jsonl")
  assert [line["text"] for line in found] == raw_texts
  out = serve_from_fresh_process(export_dir, text=raw_texts)
  for i, line in enumerate(found):
    exported = [(out["entity_type"][i][k], out["entity_start"][i][k], out["entity_end"][i][k],
                 out["entity_text"][i][k]) for k in range(out["num_entities"][i])]
    assert [(e["type"], e["start"], e["end"], e["text"]) for e in line["entities"]] == exported
    for e, score in zip(line["entities"], out["entity_score"][i]):
      assert e["text"] == raw_texts[i][e["start"]:e["end"]]
      assert e["score"] == pytest.approx(score, abs=1e-5)
  # The gold entities, as character spans counted by hand in the texts.
  assert [[(e["type"], e["start"], e["end"]) for e in found[i]["entities"]]
          for i in (0, 1, 2, 7)] == [
      [("PER", 0, 10), ("LOC", 19, 24)],
      [("PER", 0, 4), ("PER", 9, 20), ("LOC", 24, 30), ("LOC", 32, 38), ("LOC", 43, 48)],
      [("LOC", 1, 5)],
      [("PER", 0, 12), ("PER", 14, 25), ("PER", 30, 42), ("LOC", 50, 56), ("LOC", 58, 62)]]
  assert found[3]["entities"] == [] and len(found[6]["entities"]) > 50

  # Later, the trained model alone: the same entities.
  (tmp_path / "few.txt").write_text("\n".join(raw_texts[:3]), encoding="utf-8")
  result = subprocess.run(
      [sys.executable, "run_ner.py", "--predict_file=%s" % (tmp_path / "few.txt"),
       "--vocab_file=" + UNCASED, "--bert_config_file=%s" % config,
       "--output_dir=%s" % output_dir, "--max_seq_length=32", "--doc_stride=12"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  again = _entities(output_dir / "entities.jsonl")
  assert [line["text"] for line in again] == raw_texts[:3]
  for line, before in zip(again, found):
    assert [(e["type"], e["start"], e["end"]) for e in line["entities"]] == [
        (e["type"], e["start"], e["end"]) for e in before["entities"]]


def test_bad_input_is_one_line(tmp_path):
  bad, no_dev = tmp_path / "bad", tmp_path / "no_dev"
  for directory, train in ((bad, "John B-PER\nsaid\n"), (no_dev, "John B-PER\nsaid O\n")):
    directory.mkdir()
    (directory / "train.txt").write_text(train)
  bad_json = tmp_path / "train.jsonl"
  bad_json.write_text('{"tokens": ["John"], "tags": ["B-PER"]}\n'
                      '{"tokens": ["said"], "tags": [0]}\n')
  bad_text = tmp_path / "texts.txt"
  bad_text.write_bytes(b"John Smith flew to Paris.\nCaf\xe9\n")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(CONFIG))
  base = ["--vocab_file=" + UNCASED, "--bert_config_file=%s" % config, "--max_seq_length=32"]
  train_file = "--train_file=%s" % (no_dev / "train.txt")
  cases = [
      (["--data_dir=%s" % bad, "--do_train"], "train.txt:2: expected a word and its tag"),
      (["--data_dir=%s" % no_dev, "--do_eval"], "has no dev file"),
      (["--data_dir=%s" % no_dev, "--do_train", "--doc_stride=0"], "--doc_stride=0"),
      (["--train_file=%s" % bad_json, "--do_train"],
       'train.jsonl:2: "tags" holds numbers (0); give the tags as strings'),
      (["--data_dir=%s" % no_dev, train_file, "--do_train"], "either --data_dir or your own"),
      ([train_file, "--do_train", "--do_eval"], "--do_eval needs --dev_file"),
      ([train_file, "--dev_file=%s" % (tmp_path / "missing.jsonl"), "--do_train"],
       "--dev_file=%s: no such file" % (tmp_path / "missing.jsonl")),
      (["--do_train"], "No train file: give --train_file or --data_dir"),
      ([train_file, "--do_train", "--predict_file=%s" % bad_text],
       "texts.txt:2: not UTF-8 (byte 4 of the line"),
  ]
  results = run_cli_cases("run_ner.py", [
      base + args + ["--output_dir=%s" % (tmp_path / ("out%d" % i))]
      for i, (args, _) in enumerate(cases)])
  for result, (_, fragment) in zip(results, cases):
    assert_one_line_error(result, "run_ner.py", fragment)
  for i in range(len(cases)):  # Nothing half-written.
    for name in ("train.tf_record", "entities.jsonl", "predict_text.tf_record"):
      assert not os.path.exists(tmp_path / ("out%d" % i) / name)


def test_json_lines_files_train_as_the_same_rows_in_conll(tmp_path):
  """--train_file and --dev_file in JSON Lines (Hugging Face datasets'
  conll2003 layout, tags as strings) give the labels and eval_results.txt
  that --data_dir gives for the same rows as CoNLL files."""
  rng = random.Random(12)
  splits = {"train": [_sentence(rng, rng.randint(3, 12)) for _ in range(64)],
            "dev": [_sentence(rng, rng.randint(3, 12)) for _ in range(16)]}
  conll_dir = tmp_path / "conll"
  conll_dir.mkdir()
  for split, rows in splits.items():
    _write(conll_dir / (split + ".txt"), rows, "IOB2")
    with open(tmp_path / (split + ".jsonl"), "w", encoding="utf-8") as f:
      for i, (words, tags) in enumerate(rows):
        f.write(json.dumps({"id": str(i), "tokens": words, "pos_tags": [0] * len(words),
                            "ner_tags": tags}) + "\n")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(CONFIG))
  base = ["--do_train", "--do_eval", "--vocab_file=" + UNCASED,
          "--bert_config_file=%s" % config, "--max_seq_length=32", "--doc_stride=12",
          "--train_batch_size=16", "--learning_rate=3e-3", "--num_train_epochs=1",
          "--eval_batch_size=16"]
  from_conll, from_json = run_cli_cases("run_ner.py", [
      base + ["--data_dir=%s" % conll_dir, "--output_dir=%s" % (tmp_path / "a")],
      base + ["--train_file=%s" % (tmp_path / "train.jsonl"),
              "--dev_file=%s" % (tmp_path / "dev.jsonl"), "--output_dir=%s" % (tmp_path / "b")]])
  assert from_conll.returncode == 0 and from_json.returncode == 0, from_json.stderr[-3000:]
  assert ((tmp_path / "a" / "labels.txt").read_text() ==
          (tmp_path / "b" / "labels.txt").read_text())
  assert (read_eval_results(tmp_path / "a" / "eval_results.txt") ==
          read_eval_results(tmp_path / "b" / "eval_results.txt"))


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
