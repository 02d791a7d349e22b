"""fill_mask.py against the original's masked-LM head, and its export against
the command.

tests/data/fill_mask_reference/reference.json holds, for each line of
input.txt, the top 5 tokens and probabilities the original's BertModel and
get_masked_lm_output give on the reference checkpoint
(tests/reference_makers/make_fill_mask_reference.py)."""

import json
import os
import subprocess
import sys

import numpy as np

from conftest import (MODELING_REF, REPO_ROOT, assert_one_line_error, data_file,
                      reference_checkpoint, run_cli_cases, serve_from_fresh_process)
import modeling

FOLDER = "fill_mask_reference/"


def _fill(tmp_path, extra=()):
  output = tmp_path / "filled.jsonl"
  result = subprocess.run(
      [sys.executable, "fill_mask.py", "--input_file=" + data_file(FOLDER + "input.txt"),
       "--output_file=%s" % output, "--vocab_file=" + data_file(FOLDER + "vocab.txt"),
       "--bert_config_file=" + data_file(MODELING_REF + "bert_config.json"),
       "--init_checkpoint=" + reference_checkpoint(), "--max_seq_length=40", "--top_k=5",
       "--batch_size=3"] + list(extra),
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  with open(output, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_top_tokens_are_the_originals_and_the_export_gives_them(tmp_path):
  with open(data_file(FOLDER + "reference.json"), encoding="utf-8") as f:
    reference = json.load(f)
  with open(data_file(FOLDER + "vocab.txt"), encoding="utf-8") as f:
    vocab = f.read().splitlines()
  export_dir = tmp_path / "export"
  filled = _fill(tmp_path, ["--export_dir=%s" % export_dir])
  assert len(filled) == len(reference) == 7
  compared = 0
  for got, want in zip(filled, reference):
    assert [m["position"] for m in got["masks"]] == [m["position"] for m in want["masks"]]
    for mask, wanted in zip(got["masks"], want["masks"]):
      assert [p["id"] for p in mask["predictions"]] == wanted["ids"]
      assert [p["token"] for p in mask["predictions"]] == [vocab[i] for i in wanted["ids"]]
      np.testing.assert_allclose([p["probability"] for p in mask["predictions"]],
                                 wanted["probabilities"], atol=1e-5, rtol=0)
      compared += 1
  assert compared >= 8
  assert filled[3]["masks"] == []  # No [MASK] in that line.
  assert filled[5]["masks_past_max_seq_length"] == 2  # Cut at 40 tokens.

  # The SavedModel, on the same raw lines, from a process without the project.
  texts = [record["text"] for record in filled]
  out = serve_from_fresh_process(export_dir, text=texts)
  for i, record in enumerate(filled):
    assert out["num_masks"][i] == len(record["masks"])
    for k, mask in enumerate(record["masks"]):
      assert out["token_ids"][i][k] == [p["id"] for p in mask["predictions"]]
      assert out["tokens"][i][k] == [p["token"] for p in mask["predictions"]]
      np.testing.assert_allclose(out["probabilities"][i][k],
                                 [p["probability"] for p in mask["predictions"]], atol=1e-5)


def test_a_checkpoint_without_the_head_is_one_line(tmp_path):
  config = modeling.BertConfig.from_json_file(data_file(MODELING_REF + "bert_config.json"))
  fine_tuned = str(tmp_path / "classifier" / "bert_model.ckpt")
  modeling.save_original_checkpoint(modeling.BertClassifier(config, num_labels=2), fine_tuned)
  (result,) = run_cli_cases("fill_mask.py", [[
      "--input_file=" + data_file(FOLDER + "input.txt"), "--output_file=%s" % (
          tmp_path / "out.jsonl"), "--vocab_file=" + data_file(FOLDER + "vocab.txt"),
      "--bert_config_file=" + data_file(MODELING_REF + "bert_config.json"),
      "--init_checkpoint=" + fine_tuned, "--max_seq_length=40"]])
  assert_one_line_error(result, "fill_mask.py", "no masked-LM head")
  assert not os.path.exists(tmp_path / "out.jsonl")
