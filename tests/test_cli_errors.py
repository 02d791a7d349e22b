"""Every command-line entry point reports a user's mistake as one line naming
the file, line or flag, exits with status 1, and prints no traceback."""

import os
import subprocess
import sys

from conftest import REPO_ROOT, data_file

EVAL_REF = "eval_reference/"


def _run(command, *args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  return subprocess.run([sys.executable] + command + list(args), cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=300, env=env)


def _assert_one_line_error(result, program, *fragments):
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith(program + ": error: ")]
  assert len(errors) == 1, result.stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], errors[0]


def test_create_pretraining_data_and_learn_vocab(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("hello hello.\n")
  result = _run(["-m", "data_prep.create_pretraining_data"], "--input_file=%s" % corpus,
                "--output_file=%s" % (tmp_path / "out.tfrecord"), "--vocab_file=%s" % vocab)
  _assert_one_line_error(result, "create_pretraining_data.py", str(vocab), "[MASK]")
  assert not os.path.exists(tmp_path / "out.tfrecord")
  result = _run(["-m", "vocab.learn_vocab"], "--input_file=%s" % (tmp_path / "missing*"),
                "--output_file=%s" % (tmp_path / "v.txt"), "--vocab_size=200")
  assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]


def test_convert_checkpoint_and_run_pretraining(tmp_path):
  config = data_file(EVAL_REF + "bert_config.json")
  result = _run(["-m", "modeling.convert_checkpoint"], "--bert_config_file=" + config,
                "--input_checkpoint=%s" % (tmp_path / "nothing"),
                "--output_checkpoint=%s" % (tmp_path / "out"))
  _assert_one_line_error(result, "convert_checkpoint.py", "No checkpoint at", "nothing")
  result = _run(["run_pretraining.py"], "--bert_config_file=" + config,
                "--input_file=" + data_file("pretraining_reference/sample_default.tfrecord"),
                "--output_dir=%s" % tmp_path, "--do_train", "--max_seq_length=64")
  _assert_one_line_error(result, "run_pretraining.py", "--max_seq_length=64")
  # --traceback shows the traceback of the same error.
  result = _run(["run_pretraining.py"], "--bert_config_file=" + config,
                "--input_file=" + data_file("pretraining_reference/sample_default.tfrecord"),
                "--output_dir=%s" % tmp_path, "--do_train", "--max_seq_length=64",
                "--traceback")
  assert result.returncode != 0 and "Traceback" in result.stderr


def _classifier(tmp_path, data_dir, *extra):
  return _run(["run_classifier.py"], "--task_name=MRPC", "--do_eval",
              "--data_dir=%s" % data_dir, "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"),
              "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
              "--output_dir=%s" % (tmp_path / "out"), *extra)


def test_run_classifier_bad_inputs(tmp_path):
  data = tmp_path / "data"
  data.mkdir()
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  (data / "dev.tsv").write_text(header + "1\t1\t2\tA cat.\tA dog.\n0\t3\t4\tno second sentence\n")
  result = _classifier(tmp_path, data)
  _assert_one_line_error(result, "run_classifier.py", "dev.tsv:3", "expected at least 5")
  assert not list((tmp_path / "out").glob("*.tf_record*"))

  (data / "dev.tsv").write_text(header + "1\t1\t2\tA cat.\tA dog.\nyes\t3\t4\tA.\tB.\n")
  result = _classifier(tmp_path, data)
  _assert_one_line_error(result, "run_classifier.py", "dev.tsv:3", "unknown label 'yes'")
  assert not list((tmp_path / "out").glob("*.tf_record*"))

  (data / "dev.tsv").write_text(header)
  _assert_one_line_error(_classifier(tmp_path, data), "run_classifier.py", "no examples")

  result = _classifier(tmp_path, data, "--task_name=paraphrase")
  _assert_one_line_error(result, "run_classifier.py", "'paraphrase'", "mrpc", "cola", "sst-2")

  result = _classifier(tmp_path, data, "--do_lower_case=False",
                       "--init_checkpoint=/models/uncased_L-12_H-768_A-12/bert_model.ckpt")
  _assert_one_line_error(result, "run_classifier.py", "--do_lower_case=False",
                         "uncased_L-12_H-768_A-12")

  (data / "dev.tsv").write_text(header + "1\t1\t2\tA cat.\tA dog.\n")
  result = _classifier(tmp_path, data,
                       "--init_checkpoint=" + data_file("modeling_reference/model.ckpt"))
  _assert_one_line_error(result, "run_classifier.py", "has shape", "bert/embeddings")
  assert not (tmp_path / "out" / "eval_results.txt").exists()


def test_run_squad_bad_inputs(tmp_path):
  common = ["--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"),
            "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
            "--output_dir=%s" % (tmp_path / "out"), "--do_predict",
            "--max_seq_length=64", "--max_query_length=16"]
  bad = tmp_path / "bad.json"
  bad.write_text('{"version": "1.1", "data": [')
  result = _run(["run_squad.py"], "--predict_file=%s" % bad, *common)
  _assert_one_line_error(result, "run_squad.py", "bad.json")
  missing_id = tmp_path / "missing.json"
  missing_id.write_text('{"data": [{"paragraphs": [{"context": "A b c.", '
                        '"qas": [{"question": "What?", "answers": []}]}]}]}')
  result = _run(["run_squad.py"], "--predict_file=%s" % missing_id, *common)
  _assert_one_line_error(result, "run_squad.py", "missing.json")
  result = _run(["run_squad.py"], "--predict_file=%s" % bad, *common[:-1],
                "--max_query_length=64")
  _assert_one_line_error(result, "run_squad.py", "max_seq_length (64)", "max_query_length")
  assert not (tmp_path / "out" / "predictions.json").exists()
