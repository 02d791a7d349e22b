"""run_classifier.py on the user's own files (--train_file, --dev_file,
--test_file): CSV, TSV and JSON Lines read as Python's csv and json read
them, labels found in the training file, and the same results as the GLUE
task name gives on the same rows."""

import csv
import json
import os

import pytest

from classifier_runs import CONFIG, UNCASED
from conftest import assert_one_line_error, data_file, run_cli_cases, shared_path
from plumbing.errors import UserError
from tasks.classification import user_files
from tasks.classification.user_files import Columns


def _write(path, text):
  with open(path, "w", encoding="utf-8", newline="") as f:
    f.write(text)
  return str(path)


def _texts(examples):
  return [(e.text_a, e.text_b, e.label) for e in examples]


def test_csv_is_read_as_pythons_csv_reads_it(tmp_path):
  # A byte-order mark, CRLF line ends, a quoted comma, quote and line break,
  # blank lines, and a header with spaces around the names.
  train = _write(tmp_path / "train.csv",
                 "\ufeffreview , sentiment\r\n"
                 "\"Great, really \"\"great\"\"\",positive\r\n"
                 "\r\n"
                 "\"Two\r\nlines\",negative\r\n"
                 "Fine,positive\r\n")
  columns = Columns(text_a=None, label="sentiment")
  labels = user_files.discover_labels(train, columns)
  assert labels == ["negative", "positive"]
  processor = user_files.UserFilesProcessor({"train": train}, columns, labels)
  assert _texts(processor.get_train_examples(None)) == [
      ('Great, really "great"', None, "positive"), ("Two\r\nlines", None, "negative"),
      ("Fine", None, "positive")]
  # Each example knows the line its row starts on.
  assert [e.source for e in processor.get_train_examples(None)] == [
      train + ":2", train + ":4", train + ":6"]
  assert processor.single_sentence and processor.metrics == ("f1",)


def test_headerless_tsv_by_index_and_jsonl_by_key(tmp_path):
  tsv = _write(tmp_path / "train.tsv", "a\tb\t10\nc\td\t2\n\ne\tf\t2\n")
  columns = Columns.from_flags("0", "1", "2")
  assert not columns.has_header
  labels = user_files.discover_labels(tsv, columns)
  assert labels == ["2", "10"]  # Integers sort as numbers.
  processor = user_files.UserFilesProcessor({"train": tsv}, columns, labels)
  assert _texts(processor.get_train_examples(None)) == [("a", "b", "10"), ("c", "d", "2"),
                                                        ("e", "f", "2")]
  jsonl = _write(tmp_path / "train.jsonl",
                 '{"sentence1": "x", "sentence2": "y", "label": 1}\n\n'
                 '{"sentence1": "z \\u00e9", "sentence2": "w", "label": 0}\n')
  columns = Columns.from_flags(None, None, None)
  labels = user_files.discover_labels(jsonl, columns)
  processor = user_files.UserFilesProcessor({"train": jsonl}, columns, labels)
  assert labels == ["0", "1"] and not processor.single_sentence  # sentence1/2: a pair.
  assert _texts(processor.get_train_examples(None)) == [("x", "y", "1"), ("z \u00e9", "w", "0")]


def test_regression_labels_and_label_names(tmp_path):
  train = _write(tmp_path / "train.csv", "text,score\nx,1.5\ny,4\n")
  processor = user_files.UserFilesProcessor(
      {"train": train}, Columns(label="score"),
      user_files.labels_for({"train": train}, Columns(label="score"), None, str(tmp_path),
                            regression=True), regression=True)
  assert processor.num_labels == 1 and processor.is_regression
  assert [e.label for e in processor.get_train_examples(None)] == [1.5, 4.0]
  # --label_names fixes the order; labels.txt of an earlier run is kept.
  columns = Columns(label="score")
  assert user_files.labels_for({"train": train}, columns, ["4", "1.5"], str(tmp_path)) == [
      "4", "1.5"]
  (tmp_path / "labels.txt").write_text("4\n1.5\n", encoding="utf-8")
  assert user_files.labels_for({}, columns, None, str(tmp_path)) == ["4", "1.5"]
  with pytest.raises(UserError, match="differs from"):
    user_files.labels_for({"train": train}, columns, ["1.5", "4"], str(tmp_path))


def test_one_label_to_choose_from_is_refused_unless_multi_label(tmp_path):
  """A classifier of one output would be trained as nothing (one class's
  cross-entropy is 0): one line says what to give instead."""
  train = _write(tmp_path / "train.csv", "text,label\nx,yes\ny,yes\n")
  columns = Columns(label="label")
  for names in (None, ["yes"]):
    labels = user_files.labels_for({"train": train}, columns, names, str(tmp_path / "out"))
    with pytest.raises(UserError, match="Only one label \\(yes\\).*--regression"):
      user_files.UserFilesProcessor({"train": train}, columns, labels)
  # A multi-label task's one label is a yes or no per text.
  processor = user_files.UserFilesProcessor({"train": train}, columns, ["yes"], separator=";")
  assert processor.get_labels() == ["yes"]


@pytest.mark.parametrize("case", ["unseen_dev_label", "missing_field", "missing_column",
                                  "bad_json", "mixed_columns", "no_text_column",
                                  "not_a_number", "unknown_extension"])
def test_bad_files_are_one_error_naming_file_line_and_value(tmp_path, case):
  train = _write(tmp_path / "train.csv", "text,label\nx,a\ny,b\n")
  paths, columns, regression = {"train": train}, Columns(), False
  if case == "unseen_dev_label":
    paths["dev"] = _write(tmp_path / "dev.csv", "text,label\nx,a\n\ny,c\n")
    fragments = [paths["dev"] + ":4", "'c'", "a, b"]
  elif case == "missing_field":
    paths["dev"] = _write(tmp_path / "dev.tsv", "w\ta\nz\n")
    columns = Columns.from_flags("0", None, "1")
    paths["train"] = _write(tmp_path / "train.tsv", "x\ta\n")
    fragments = [paths["dev"] + ":2", "1 fields", "column 1"]
  elif case == "missing_column":
    paths["dev"] = _write(tmp_path / "dev.csv", "review,label\nx,a\n")
    columns = Columns(text_a="text")
    fragments = ["--text_a_column=text", paths["dev"], "review, label"]
  elif case == "bad_json":
    paths["train"] = _write(tmp_path / "train.jsonl", '{"text": "x", "label": "a"}\n{"text"\n')
    fragments = [paths["train"] + ":2", "not a JSON object"]
  elif case == "mixed_columns":
    fragments = ["all be header names, or all 0-based indexes"]
  elif case == "no_text_column":
    paths["train"] = _write(tmp_path / "train.csv", "id,review,label\n1,x,a\n")
    fragments = ["--train_file=" + paths["train"], "--text_a_column", "id, review"]
  elif case == "not_a_number":
    regression = True
    fragments = [train + ":2", "'a'", "not a number"]
  else:
    paths["train"] = _write(tmp_path / "train.txt", "x\n")
    fragments = ["--train_file=" + paths["train"], ".txt", ".csv, .tsv or .jsonl"]
  with pytest.raises(UserError) as error:
    if case == "mixed_columns":
      Columns.from_flags("review", None, "1")
    labels = user_files.labels_for(paths, columns, None, str(tmp_path / "out"), regression)
    user_files.UserFilesProcessor(paths, columns, labels, regression)
  for fragment in fragments:
    assert fragment in str(error.value), str(error.value)


# The same rows as MRPC's files and as the user's own, in every format.
def _mrpc_rows():
  with open(shared_path("checks/classifier/MRPC/dev.tsv"), encoding="utf-8-sig") as f:
    lines = f.read().splitlines()
  return lines[0], [line.split("\t") for line in lines[1:81]]


def _user_files(directory, rows):
  """train/dev in three layouts: CSV by header name, TSV by index (no
  header), JSON Lines by key. Returns {layout: (flags)}."""
  os.makedirs(directory, exist_ok=True)
  splits = {"train": rows[:48], "dev": rows[48:]}
  layouts = {}
  for split, part in splits.items():
    with open(os.path.join(directory, split + ".csv"), "w", encoding="utf-8", newline="") as f:
      writer = csv.writer(f)
      writer.writerow(["quality", "first", "second"])
      writer.writerows([r[0], r[3], r[4]] for r in part)
    with open(os.path.join(directory, split + ".tsv"), "w", encoding="utf-8", newline="") as f:
      csv.writer(f, delimiter="\t").writerows(
          [r[3], r[4], r[0]] for r in part)
    with open(os.path.join(directory, split + ".jsonl"), "w", encoding="utf-8") as f:
      for r in part:
        f.write(json.dumps({"sentence1": r[3], "sentence2": r[4], "label": int(r[0])}) + "\n")
  for layout, columns in (("csv", ["--text_a_column=first", "--text_b_column=second",
                                   "--label_column=quality"]),
                          ("tsv", ["--text_a_column=0", "--text_b_column=1",
                                   "--label_column=2"]),
                          ("jsonl", [])):
    layouts[layout] = ["--%s_file=%s" % (split, os.path.join(directory, split + "." + layout))
                       for split in splits] + columns
  return layouts


def _common(output_dir):
  return ["--do_train", "--do_eval", "--vocab_file=" + data_file(UNCASED),
          "--bert_config_file=" + CONFIG,
          "--init_checkpoint=" + data_file("eval_reference/model.ckpt"),
          "--max_seq_length=32", "--train_batch_size=8", "--num_train_epochs=1",
          "--learning_rate=1e-3", "--output_dir=%s" % output_dir]


def test_own_files_give_the_glue_tasks_results(tmp_path):
  header, rows = _mrpc_rows()
  glue_dir = tmp_path / "MRPC"
  glue_dir.mkdir()
  (glue_dir / "train.tsv").write_text(
      "\n".join([header] + ["\t".join(r) for r in rows[:48]]) + "\n", encoding="utf-8")
  (glue_dir / "dev.tsv").write_text(
      "\n".join([header] + ["\t".join(r) for r in rows[48:]]) + "\n", encoding="utf-8")
  layouts = _user_files(tmp_path / "own", rows)
  cases = [["--task_name=MRPC", "--data_dir=%s" % glue_dir] + _common(tmp_path / "glue")]
  cases += [layouts[name] + _common(tmp_path / name) for name in sorted(layouts)]
  results = run_cli_cases("run_classifier.py", cases)
  for result in results:
    assert result.returncode == 0, result.stderr[-3000:]
  with open(tmp_path / "glue" / "eval_results.txt", encoding="utf-8") as f:
    expected = f.read()
  assert "eval_f1" in expected and "global_step = 6" in expected
  for name in sorted(layouts):
    with open(tmp_path / name / "eval_results.txt", encoding="utf-8") as f:
      assert f.read() == expected, name
    with open(tmp_path / name / "labels.txt", encoding="utf-8") as f:
      assert f.read() == "0\n1\n"


def test_regression_files_give_sts_b_results(tmp_path):
  with open(shared_path("glue/STS-B/dev.tsv"), encoding="utf-8") as f:
    lines = f.read().splitlines()[:61]
  glue_dir = tmp_path / "STS-B"
  glue_dir.mkdir()
  (glue_dir / "train.tsv").write_text("\n".join(lines[:41]) + "\n", encoding="utf-8")
  (glue_dir / "dev.tsv").write_text("\n".join(lines[:1] + lines[41:]) + "\n", encoding="utf-8")
  rows = [line.split("\t") for line in lines[1:]]
  own = {}
  for split, part in (("train", rows[:40]), ("dev", rows[40:])):
    path = tmp_path / (split + ".csv")
    with open(path, "w", encoding="utf-8", newline="") as f:
      writer = csv.writer(f)
      writer.writerow(["sentence1", "sentence2", "score"])
      writer.writerows([r[7], r[8], r[9]] for r in part)
    own[split] = str(path)
  results = run_cli_cases("run_classifier.py", [
      ["--task_name=STS-B", "--data_dir=%s" % glue_dir] + _common(tmp_path / "glue"),
      ["--train_file=" + own["train"], "--dev_file=" + own["dev"], "--label_column=score",
       "--regression"] + _common(tmp_path / "own")])
  for result in results:
    assert result.returncode == 0, result.stderr[-3000:]
  with open(tmp_path / "glue" / "eval_results.txt", encoding="utf-8") as f:
    expected = f.read()
  assert "eval_pearson" in expected and "eval_spearman" in expected
  with open(tmp_path / "own" / "eval_results.txt", encoding="utf-8") as f:
    assert f.read() == expected
  assert not (tmp_path / "own" / "labels.txt").exists()


def test_command_line_mistakes_are_one_line_and_write_nothing(tmp_path):
  train = _write(tmp_path / "train.csv", "text,label\nx,a\ny,b\n")
  dev = _write(tmp_path / "dev.csv", "text,label\nx,a\ny,c\n")
  base = ["--vocab_file=" + data_file(UNCASED), "--bert_config_file=" + CONFIG, "--do_train",
          "--do_eval"]
  cases = {
      "unseen": (["--train_file=" + train, "--dev_file=" + dev], [dev + ":3", "'c'"]),
      "both": (["--train_file=" + train, "--task_name=MRPC", "--data_dir=."],
               ["either --task_name", "--train_file"]),
      "neither": ([], ["--task_name is required", "--train_file"]),
      "column_with_task": (["--task_name=MRPC", "--data_dir=.", "--label_column=x"],
                           ["--label_column", "own files"]),
  }
  names = sorted(cases)
  results = run_cli_cases("run_classifier.py", [
      base + cases[n][0] + ["--output_dir=%s" % (tmp_path / n)] for n in names])
  for name, result in zip(names, results):
    assert_one_line_error(result, "run_classifier.py", *cases[name][1])
    assert not (tmp_path / name).exists(), name
