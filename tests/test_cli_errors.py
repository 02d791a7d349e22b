"""Every command-line entry point reports a user's mistake as one line naming
the file, line or flag, exits with status 1, and prints no traceback.

The cases of one entry point run in one process (conftest.run_cli_cases,
through the entry point's own main and plumbing.cli.run); the scripts' real
`python run_x.py` entry points are run by their own tests."""

import os

from conftest import assert_one_line_error, data_file, run_cli_cases

EVAL_REF = "eval_reference/"
UNCASED = data_file("vocab/bert_uncased_vocab.txt")


def test_create_pretraining_data_and_learn_vocab(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("hello hello.\n")
  (result,) = run_cli_cases("create_pretraining_data.py", [[
      "--input_file=%s" % corpus, "--output_file=%s" % (tmp_path / "out.tfrecord"),
      "--vocab_file=%s" % vocab]])
  assert_one_line_error(result, "create_pretraining_data.py", str(vocab), "[MASK]")
  assert not os.path.exists(tmp_path / "out.tfrecord")
  (result,) = run_cli_cases("learn_vocab.py", [[
      "--input_file=%s" % (tmp_path / "missing*"), "--output_file=%s" % (tmp_path / "v.txt"),
      "--vocab_size=200"]])
  assert_one_line_error(result, "learn_vocab.py", "missing*")


def test_convert_checkpoint_and_run_pretraining(tmp_path):
  config = data_file(EVAL_REF + "bert_config.json")
  (result,) = run_cli_cases("convert_checkpoint.py", [[
      "--bert_config_file=" + config, "--input_checkpoint=%s" % (tmp_path / "nothing"),
      "--output_checkpoint=%s" % (tmp_path / "out")]])
  assert_one_line_error(result, "convert_checkpoint.py", "No checkpoint at", "nothing")
  pretraining = ["--bert_config_file=" + config,
                 "--input_file=" + data_file("pretraining_reference/sample_default.tfrecord"),
                 "--output_dir=%s" % tmp_path, "--do_train", "--max_seq_length=64"]
  too_long, with_traceback = run_cli_cases("run_pretraining.py", [
      pretraining, pretraining + ["--traceback"]])
  assert_one_line_error(too_long, "run_pretraining.py", "--max_seq_length=64")
  # --traceback shows the traceback of the same error.
  assert with_traceback.returncode != 0 and "Traceback" in with_traceback.stderr


def test_run_classifier_bad_inputs(tmp_path):
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  datasets = {
      "short_line": header + "1\t1\t2\tA cat.\tA dog.\n0\t3\t4\tno second sentence\n",
      "bad_label": header + "1\t1\t2\tA cat.\tA dog.\nyes\t3\t4\tA.\tB.\n",
      "empty": header,
      "good": header + "1\t1\t2\tA cat.\tA dog.\n",
  }
  for name, text in datasets.items():
    (tmp_path / name).mkdir()
    (tmp_path / name / "dev.tsv").write_text(text)

  def case(data, *extra):
    return ["--task_name=MRPC", "--do_eval", "--data_dir=%s" % (tmp_path / data),
            "--vocab_file=" + UNCASED,
            "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
            "--output_dir=%s" % (tmp_path / ("out_" + data))] + list(extra)
  results = run_cli_cases("run_classifier.py", [
      case("short_line"), case("bad_label"), case("empty"),
      case("empty", "--task_name=paraphrase"),
      case("empty", "--do_lower_case=False",
           "--init_checkpoint=/models/uncased_L-12_H-768_A-12/bert_model.ckpt"),
      case("good", "--init_checkpoint=" + data_file("modeling_reference/model.ckpt"))])
  short_line, bad_label, empty, task, case_flag, shape = results
  assert_one_line_error(short_line, "run_classifier.py", "dev.tsv:3", "expected at least 5")
  assert_one_line_error(bad_label, "run_classifier.py", "dev.tsv:3", "unknown label 'yes'")
  for data in ("short_line", "bad_label"):
    assert not list((tmp_path / ("out_" + data)).glob("*.tf_record*"))
  assert_one_line_error(empty, "run_classifier.py", "no examples")
  assert_one_line_error(task, "run_classifier.py", "'paraphrase'", "mrpc", "cola", "sst-2")
  assert_one_line_error(case_flag, "run_classifier.py", "--do_lower_case=False",
                         "uncased_L-12_H-768_A-12")
  assert_one_line_error(shape, "run_classifier.py", "has shape", "bert/embeddings")
  assert not (tmp_path / "out_good" / "eval_results.txt").exists()


def test_run_squad_bad_inputs(tmp_path):
  common = ["--vocab_file=" + UNCASED,
            "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
            "--output_dir=%s" % (tmp_path / "out"), "--do_predict",
            "--max_seq_length=64", "--max_query_length=16"]
  bad = tmp_path / "bad.json"
  bad.write_text('{"version": "1.1", "data": [')
  missing_id = tmp_path / "missing.json"
  missing_id.write_text('{"data": [{"paragraphs": [{"context": "A b c.", '
                        '"qas": [{"question": "What?", "answers": []}]}]}]}')
  malformed, no_id, lengths = run_cli_cases("run_squad.py", [
      ["--predict_file=%s" % bad] + common,
      ["--predict_file=%s" % missing_id] + common,
      ["--predict_file=%s" % bad] + common[:-1] + ["--max_query_length=64"]])
  assert_one_line_error(malformed, "run_squad.py", "bad.json")
  assert_one_line_error(no_id, "run_squad.py", "missing.json")
  assert_one_line_error(lengths, "run_squad.py", "max_seq_length (64)", "max_query_length")
  assert not (tmp_path / "out" / "predictions.json").exists()
