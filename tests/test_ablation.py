"""bench/ablation.py: its step counts, tables and task subsets on hand-made
values, and one end-to-end run at the smallest sizes (then a re-run that
skips every finished run)."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT
from tasks.classification import glue

sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import ablation  # pylint: disable=g-import-not-at-top,wrong-import-position


@pytest.mark.parametrize("total,points,expected", [
    (2000, 3, [500, 1000, 2000]), (2000, 1, [2000]), (10, 3, [2, 4, 10]),
    (7, 4, [1, 2, 4, 7]), (1, 3, [1])])
def test_step_counts_double_and_end_at_the_total(total, points, expected):
  assert ablation.step_counts(total, points) == expected


def test_tables_in_the_papers_shape():
  scores = {"BERT (MLM + NSP)": {"SST-2": 0.8125, "RTE": 0.5}, "No NSP": {"SST-2": 0.75, "RTE": 0.55},
            "LTR & No NSP": {"SST-2": 0.7, "RTE": 0.525}, "No pre-training": {"SST-2": 0.6, "RTE": 0.5}}
  assert ablation.table(scores, ["SST-2", "RTE"]).splitlines() == [
      "| Pre-training | SST-2 | RTE |", "|---|---:|---:|",
      "| BERT (MLM + NSP) | 81.2 | 50.0 |", "| No NSP | 75.0 | 55.0 |",
      "| LTR & No NSP | 70.0 | 52.5 |", "| No pre-training | 60.0 | 50.0 |"]
  curves = {"BERT (MLM + NSP)": {"0": 0.6, "5": 0.7, "10": 0.8125}}
  assert ablation.curve_table(curves, [5, 10], "SST-2").splitlines()[:5] == [
      "| Pre-training steps | BERT (MLM + NSP) |", "|---:|---:|",
      "| 0 | 60.0 |", "| 5 | 70.0 |", "| 10 | 81.2 |"]


@pytest.mark.parametrize("task,header", [("RTE", "index\tsentence1\tsentence2\tlabel\n"),
                                         ("CoLA", None)])
def test_large_training_sets_are_cut_to_their_first_rows(tmp_path, task, header):
  source = tmp_path / "glue" / task
  source.mkdir(parents=True)
  if header:
    rows = ["%d\tPremise %d .\tHypothesis %d .\t%s\n" % (i, i, i, "entailment")
            for i in range(10)]
  else:
    rows = ["src\t%d\t\tSentence number %d .\n" % (i % 2, i) for i in range(10)]
  (source / "train.tsv").write_text((header or "") + "".join(rows))
  (source / "dev.tsv").write_text((header or "") + "".join(rows[:3]))
  target = ablation.task_data(task, str(tmp_path / "glue"), str(tmp_path / "work"), 4)
  processor = glue.get_processor(task)
  kept = processor.get_train_examples(target)
  assert [e.text_a for e in kept] == [e.text_a for e in
                                      processor.get_train_examples(str(source))][:4]
  assert len(processor.get_dev_examples(target)) == 3
  assert ablation.task_data(task, str(tmp_path / "glue"), str(tmp_path / "w2"), 10) == str(source)


def test_end_to_end_at_the_smallest_sizes_then_resumes(tmp_path):
  from demo import corpus as demo_corpus
  corpus = tmp_path / "corpus.txt"
  demo_corpus.write_kjv_corpus(str(corpus), max_chapters=40)
  out = tmp_path / "ablation"
  command = [sys.executable, "bench/ablation.py", "--output_dir=%s" % out,
             "--corpus=%s" % corpus, "--vocab_size=600", "--pretrain_steps=4",
             "--curve_points=1", "--max_train_examples=64", "--dupe_factor=1",
             "--num_train_epochs=1", "--train_batch_size=16"]
  result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  with open(out / "ablation.json") as f:
    summary = json.load(f)
  names = [name for _, name in ablation.MODELS]
  assert summary["tasks"] == ["pairs"] and summary["steps"] == [4]
  assert sorted(summary["scores"]) == sorted(names)
  for name in names:
    assert 0.0 <= summary["scores"][name]["pairs"] <= 1.0
  for name in names[:-1]:
    assert summary["curves"][name]["0"] == summary["scores"]["No pre-training"]["pairs"]
  assert "next_sentence_accuracy" in summary["pretraining"]["BERT (MLM + NSP)"]
  assert "next_sentence_accuracy" not in summary["pretraining"]["No NSP"]
  # The left-to-right model was pre-trained and fine-tuned with the causal config.
  for log in ("pretraining/ltr/run.log", "fine_tuning/pairs/ltr_4/run.log"):
    with open(out / log) as f:
      assert "bert_config_causal.json" in f.read()
  report = (out / "ablation.md").read_text()
  for name in names:
    assert "| %s | %.1f |" % (name, 100 * summary["scores"][name]["pairs"]) in report
  assert (out / "ablation.png").stat().st_size > 10000
  began = time.time()
  again = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert again.returncode == 0, again.stderr[-3000:]
  assert time.time() - began < 60  # Every run is skipped; only the report is rewritten.
  with open(out / "ablation.json") as f:
    assert json.load(f)["scores"] == summary["scores"]
