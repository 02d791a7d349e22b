"""extract_features.py against the original's output files.

tests/data/extract_features_reference/README.md says how they were made.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, run_cli_cases

REF = "extract_features_reference/"
UNCASED = "vocab/bert_uncased_vocab.txt"
RUNS = {  # reference dir -> flags of the original's run
    "default": ["--max_seq_length=24", "--batch_size=4"],
    "layers_0_2": ["--layers=0,2", "--max_seq_length=16", "--batch_size=5"],
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  """The reference's 4-layer checkpoint: eval_reference's embeddings, first
  layer and pooler, and layers 1-3 from layers.npz, under the original's names."""
  prefix = str(tmp_path_factory.mktemp("ef_ckpt") / "model.ckpt")
  reader = tf.train.load_checkpoint(data_file("eval_reference/model.ckpt"))
  tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
             if n.startswith(("bert/embeddings/", "bert/encoder/layer_0/", "bert/pooler/"))}
  tensors.update(dict(np.load(data_file(REF + "layers.npz"))))
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[n]) for n in names])
  return prefix


def extract(checkpoint, input_file, output_file, *extra):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run(
      [sys.executable, "extract_features.py", "--input_file=%s" % input_file,
       "--output_file=%s" % output_file, "--vocab_file=" + data_file(UNCASED),
       "--bert_config_file=" + data_file(REF + "bert_config.json"),
       "--init_checkpoint=" + checkpoint] + list(extra),
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, env=env)


def _json_lines(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _vectors(line):
  """[layers, tokens, hidden] of one JSON line of the original's format."""
  return np.array([[layer["values"] for layer in token["layers"]]
                   for token in line["features"]]).transpose(1, 0, 2)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_json_output_is_the_original(checkpoint, tmp_path, name):
  output = tmp_path / "out.jsonl"
  result = extract(checkpoint, data_file(REF + "input.txt"), output, *RUNS[name])
  assert result.returncode == 0, result.stderr[-3000:]
  ours, theirs = _json_lines(output), _json_lines(data_file(REF + name + "/output.jsonl"))
  assert [l["linex_index"] for l in ours] == [l["linex_index"] for l in theirs]
  for mine, original in zip(ours, theirs):
    assert [t["token"] for t in mine["features"]] == [t["token"] for t in original["features"]]
    assert [[l["index"] for l in t["layers"]] for t in mine["features"]] == [
        [l["index"] for l in t["layers"]] for t in original["features"]]
    np.testing.assert_allclose(_vectors(mine), _vectors(original), rtol=0, atol=1e-5)
  assert "Extracted 13 lines in" in result.stderr  # Progress is reported.


def test_npz_tfrecord_and_pooling_hold_the_original_numbers(checkpoint, tmp_path):
  reference = _json_lines(data_file(REF + "default/output.jsonl"))
  flags = RUNS["default"]
  npz = tmp_path / "out.npz"
  result = extract(checkpoint, data_file(REF + "input.txt"), npz, "--output_format=npz",
                   *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  with np.load(npz) as arrays:
    assert arrays["linex_index"].tolist() == list(range(len(reference)))
    assert arrays["layers"].tolist() == [-1, -2, -3, -4]
    np.testing.assert_array_equal(arrays["num_tokens"],
                                  [len(l["features"]) for l in reference])
    assert arrays["tokens"].tolist() == [t["token"] for l in reference for t in l["features"]]
    expected = np.concatenate([_vectors(l).transpose(1, 0, 2) for l in reference])
    np.testing.assert_allclose(arrays["values"], expected, rtol=0, atol=1e-5)
  assert sorted(os.listdir(tmp_path)) == ["out.npz"]  # No scratch left.

  records = tmp_path / "out.tfrecord"
  result = extract(checkpoint, data_file(REF + "input.txt"), records,
                   "--output_format=tfrecord", "--pooling=mean", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  rows = [tf.train.Example.FromString(r.numpy())
          for r in tf.data.TFRecordDataset(str(records))]
  assert len(rows) == len(reference)
  for row, line in zip(rows, reference):
    feature = row.features.feature
    shape = list(feature["shape"].int64_list.value)
    assert shape == [4, 16]
    values = np.array(feature["values"].float_list.value).reshape(shape)
    np.testing.assert_allclose(values, _vectors(line).mean(axis=1), rtol=0, atol=1e-5)

  pooled = tmp_path / "cls.jsonl"
  result = extract(checkpoint, data_file(REF + "input.txt"), pooled, "--pooling=cls", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = list(_json_lines(pooled))
  assert len(lines) == len(reference)
  for mine, line in zip(lines, reference):
    assert mine["pooling"] == "cls"
    np.testing.assert_allclose([l["values"] for l in mine["layers"]],
                               _vectors(line)[:, 0], rtol=0, atol=1e-5)


def test_bad_input_is_named_and_nothing_is_written(checkpoint, tmp_path):
  bad = tmp_path / "input.txt"
  bad.write_bytes(b"fine line\nsecond \xff line\n")
  common = ["--vocab_file=" + data_file(UNCASED),
            "--bert_config_file=" + data_file(REF + "bert_config.json"),
            "--init_checkpoint=" + checkpoint, "--max_seq_length=16"]
  not_utf8, layers = run_cli_cases("extract_features.py", [
      ["--input_file=%s" % bad, "--output_file=%s" % (tmp_path / "out.jsonl")] + common,
      ["--input_file=" + data_file(REF + "input.txt"), "--output_file=%s" % (tmp_path / "o"),
       "--layers=-5"] + common])
  for result, message in ((not_utf8, "%s:2: not UTF-8" % bad),
                          (layers, "the model has 4 layers")):
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "extract_features.py: error: " in result.stderr and message in result.stderr
  assert sorted(os.listdir(tmp_path)) == ["input.txt"]


def test_an_empty_line_is_an_empty_text_as_the_original(checkpoint, tmp_path):
  """The original keeps an empty line: [CLS] [SEP], so that output lines stay
  aligned with input lines."""
  input_file = tmp_path / "input.txt"
  input_file.write_text("Hello there.\n\nThird line.\n", encoding="utf-8")
  output = tmp_path / "out.jsonl"
  result = extract(checkpoint, input_file, output, "--max_seq_length=16")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "input.txt:2: empty line" in result.stderr
  lines = _json_lines(output)
  assert [line["linex_index"] for line in lines] == [0, 1, 2]
  assert [t["token"] for t in lines[1]["features"]] == ["[CLS]", "[SEP]"]
  assert lines[2]["features"][1]["token"] == "third"
