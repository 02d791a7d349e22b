"""The Apache Beam pipelines (DirectRunner): pre-training records identical,
as a set, to the sharded mode's; vocabularies identical to the in-memory
mode's; bad input stopped before the pipeline; a failed pipeline leaves no
output files."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, shared_path

PROGRAM_ERROR = "beam_pretraining_data.py: error: "
CORPORA = [data_file("pretraining_corpus_a.txt"), data_file("pretraining_corpus_b.txt")]


def _python(args, timeout=600):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable] + args, cwd=REPO_ROOT, capture_output=True,
                        text=True, timeout=timeout, env=env)


def _corpus_dir(tmp_path):
  """Three input files: the two project corpora and the original's sample text."""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for path in CORPORA + [shared_path("sample_text.txt")]:
    shutil.copy(path, corpus / os.path.basename(path))
  return corpus


def _records(pattern):
  return sorted(r.numpy() for path in sorted(glob.glob(pattern))
                for r in tf.data.TFRecordDataset(path))


@pytest.mark.parametrize("masking,beam_options", [
    (["--do_whole_word_mask=False"], []),
    (["--do_whole_word_mask=True", "--masked_lm_prob=0.2"],
     ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]),
])
def test_records_are_the_sharded_modes(tmp_path, masking, beam_options):
  corpus = _corpus_dir(tmp_path)
  common = ["--input_file=%s/*" % corpus, "--vocab_file=" + data_file(
      "vocab/bert_uncased_vocab.txt"), "--max_seq_length=64", "--max_predictions_per_seq=8",
            "--dupe_factor=2", "--random_seed=7"] + masking
  sharded = _python(["create_pretraining_data.py",
                     "--output_dir=%s" % (tmp_path / "sharded"), "--num_workers=1"] + common)
  assert sharded.returncode == 0, sharded.stderr[-2000:]
  beam = _python(["beam_pretraining_data.py",
                  "--output_dir=%s" % (tmp_path / "beam")] + common + beam_options)
  assert beam.returncode == 0, beam.stderr[-3000:]
  expected = _records(str(tmp_path / "sharded" / "*.tfrecord"))
  ours = _records(str(tmp_path / "beam" / "*.tfrecord*"))
  assert len(expected) > 100 and ours == expected
  with open(tmp_path / "beam" / "summary.json") as f:
    summary = json.load(f)
  assert summary["files"] == 3 and summary["instances"] == summary["records"] == len(expected)
  assert sum(summary["records_per_file"].values()) == len(expected)
  assert summary["documents"] > 3
  assert not glob.glob(str(tmp_path / "beam" / "beam-temp*"))


def test_bad_input_stops_before_the_pipeline(tmp_path):
  corpus = _corpus_dir(tmp_path)
  vocab = data_file("vocab/bert_uncased_vocab.txt")
  bad_vocab = tmp_path / "vocab.txt"
  bad_vocab.write_text("[PAD]\nthe\n")
  out = tmp_path / "out"
  cases = [
      (["--input_file=%s/none*" % corpus, "--vocab_file=" + vocab], "No file matches"),
      (["--input_file=%s/*" % corpus, "--vocab_file=%s" % bad_vocab], "lacks the special"),
      (["--input_file=%s/*" % corpus, "--vocab_file=" + vocab, "--max_seq_length=3"],
       "--max_seq_length=3"),
      (["--input_file=%s/*" % corpus, "--vocab_file=" + vocab, "--dupe_factr=3"],
       "Unknown arguments: --dupe_factr"),
  ]
  for args, message in cases:
    result = _python(["beam_pretraining_data.py", "--output_dir=%s" % out] + args)
    assert result.returncode == 1, result.stderr[-2000:]
    errors = [l for l in result.stderr.splitlines() if l.startswith(PROGRAM_ERROR)]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
  assert not glob.glob(str(out / "*.tfrecord*"))


def test_failed_pipeline_leaves_no_output_files(tmp_path):
  corpus = _corpus_dir(tmp_path)
  with open(corpus / "broken.txt", "wb") as f:
    f.write(b"A fine first line.\nA second line, then bad bytes \xff\xfe here.\n")
  out = tmp_path / "out"
  result = _python(["beam_pretraining_data.py", "--output_dir=%s" % out,
                    "--input_file=%s/*" % corpus,
                    "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"),
                    "--max_seq_length=64", "--dupe_factor=1"])
  assert result.returncode == 1
  errors = [l for l in result.stderr.splitlines() if l.startswith(PROGRAM_ERROR)]
  assert len(errors) == 1 and "broken.txt:2: invalid UTF-8" in errors[0], result.stderr[-3000:]
  assert errors[0].endswith("drop undecodable bytes.") and "Traceback" not in result.stderr
  assert not glob.glob(str(out / "*.tfrecord*"))
  assert not glob.glob(str(out / "beam-temp*"))


@pytest.mark.parametrize("algorithm", ["wordpiece", "sentencepiece"])
def test_beam_word_count_gives_the_same_vocabulary(tmp_path, algorithm):
  vocabularies = []
  for mode in ([], ["--beam", "--direct_num_workers=2"]):
    out = tmp_path / ("vocab%d.txt" % len(vocabularies))
    result = _python(["learn_vocab.py", "--input_file=" + ",".join(CORPORA),
                      "--output_file=%s" % out, "--vocab_size=600",
                      "--algorithm=" + algorithm] + mode)
    assert result.returncode == 0, result.stderr[-3000:]
    vocabularies.append(out.read_text(encoding="utf-8"))
  assert vocabularies[0] == vocabularies[1] and len(vocabularies[0].split("\n")) > 300


def test_unknown_flags_without_beam_are_an_error(tmp_path):
  result = _python(["learn_vocab.py", "--input_file=" + CORPORA[0],
                    "--output_file=%s" % (tmp_path / "v.txt"), "--vocab_sise=600"])
  assert result.returncode == 1 and "--vocab_sise=600" in result.stderr
  assert not (tmp_path / "v.txt").exists()
