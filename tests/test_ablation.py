"""bench/ablation.py: its step counts, tables and task subsets on hand-made
values, its plan and report with a fake runner, and one real run at the
smallest sizes."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT
from demo import report as demo_report
from tasks.classification import glue

from bench import ablation


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


def _flag(args, name):
  return next(a.split("=", 1)[1] for a in args if a.startswith("--%s=" % name))


class _FakeRunner(object):
  """Stands in for ablation.run_command: records each command and writes
  the outputs the real one would, with made-up results that say which run
  made them (accuracy 0.5 + 0.01 x the run's rank)."""

  def __init__(self, stuck=()):
    self.commands = []
    self.stuck = stuck  # (fine-tuning directory, seed) of the runs that learn nothing.

  def __call__(self, args, log_path):
    self.commands.append(args)
    if args[0] == "learn_vocab.py":
      with open(_flag(args, "output_file"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
    elif args[0] == "create_pretraining_data.py":
      open(_flag(args, "output_file"), "w").close()
    else:
      out = _flag(args, "output_dir")
      os.makedirs(out, exist_ok=True)
      results = {"masked_lm_accuracy": 0.25} if args[0] == "run_pretraining.py" else {
          "eval_accuracy": 0.5 + 0.01 * len(self.commands)}
      with open(os.path.join(out, "eval_results.txt"), "w") as f:
        f.writelines("%s = %s\n" % kv for kv in results.items())
      if args[0] == "run_classifier.py":  # Training loss summaries; ln(2) is 0.693.
        stuck = (os.path.basename(out), _flag(args, "seed")) in self.stuck
        with tf.summary.create_file_writer(os.path.join(out, "train")).as_default(step=10):
          tf.summary.scalar("loss", 0.7 if stuck else 0.3)
    return 0.0


def test_plan_and_report_with_a_fake_runner(tmp_path, monkeypatch):
  """Which commands the ablation runs (objectives, configs, checkpoints),
  that its report says what the runs found, and that a re-run runs nothing."""
  runner = _FakeRunner()
  monkeypatch.setattr(ablation, "run_command", runner)
  out = tmp_path / "ablation"
  argv = ["--output_dir=%s" % out, "--pretrain_steps=8", "--curve_points=2",
          "--max_train_examples=40"]
  ablation.main(argv)
  pretraining = [c for c in runner.commands if c[0] == "run_pretraining.py"]
  fine_tuning = [c for c in runner.commands if c[0] == "run_classifier.py"]
  assert [_flag(c, "pretraining_objective") for c in pretraining] == ["mlm_nsp", "mlm", "ltr"]
  for command in pretraining:  # Checkpoints kept at every Figure 5 point.
    assert ("--save_checkpoints_steps=4" in command and "--keep_checkpoint_max=0" in command
            and "--num_train_steps=8" in command)
    assert _flag(command, "bert_config_file").endswith(
        "bert_config_causal.json" if "--pretraining_objective=ltr" in command
        else "bert_config.json")
  # Table 5: every objective at 8 steps and no pre-training; Figure 5: step 4.
  starts = [_flag(c, "init_checkpoint") if any(a.startswith("--init_checkpoint=") for a in c)
            else None for c in fine_tuning]
  assert [s and os.path.relpath(s, out) for s in starts] == [
      "pretraining/mlm_nsp/ckpt-8", "pretraining/mlm/ckpt-8", "pretraining/ltr/ckpt-8", None,
      "pretraining/mlm_nsp/ckpt-4", "pretraining/mlm/ckpt-4", "pretraining/ltr/ckpt-4"]
  assert all(_flag(c, "bert_config_file").endswith("_causal.json") == ("/ltr/" in (s or ""))
             for c, s in zip(fine_tuning, starts))
  with open(out / "ablation.json") as f:
    summary = json.load(f)
  rank = {s: runner.commands.index(c) + 1 for c, s in zip(fine_tuning, starts)}
  accuracy = lambda start: 0.5 + 0.01 * rank[start and str(out / start)]
  names = [name for _, name in ablation.MODELS]
  expected = dict(zip(names, [accuracy("pretraining/%s/ckpt-8" % o) if o else accuracy(None)
                              for o, _ in ablation.MODELS]))
  assert {n: summary["scores"][n]["pairs"] for n in names} == pytest.approx(expected)
  for objective, name in ablation.MODELS[:-1]:
    assert summary["curves"][name] == pytest.approx({
        "0": expected["No pre-training"], "4": accuracy("pretraining/%s/ckpt-4" % objective),
        "8": expected[name]})
  report = (out / "ablation.md").read_text()
  for name in names:
    assert "| %s | %.1f |" % (name, 100 * expected[name]) in report
  runner.commands.clear()
  ablation.main(argv)  # Everything is done: nothing runs again.
  assert runner.commands == []
  with open(out / "ablation.json") as f:
    assert json.load(f)["scores"] == summary["scores"]


def test_a_fine_tuning_run_that_learns_nothing_is_run_again(tmp_path, monkeypatch):
  """A fine-tuning run whose training loss ends at the labels' entropy is
  run again with the next seed, for any model; the last run counts and the
  report names the runs repeated."""
  runner = _FakeRunner(stuck={("mlm_nsp_8", "12345"), ("mlm_nsp_8_seed12346", "12346"),
                              ("none", "12345")})
  monkeypatch.setattr(ablation, "run_command", runner)
  out = tmp_path / "ablation"
  ablation.main(["--output_dir=%s" % out, "--pretrain_steps=8", "--curve_points=1",
                 "--max_train_examples=40", "--objectives=mlm_nsp"])
  classifier_runs = [c for c in runner.commands if c[0] == "run_classifier.py"]
  runs = [(os.path.relpath(_flag(c, "output_dir"), out), _flag(c, "seed"))
          for c in classifier_runs]
  assert runs == [("fine_tuning/pairs/mlm_nsp_8", "12345"),
                  ("fine_tuning/pairs/mlm_nsp_8_seed12346", "12346"),
                  ("fine_tuning/pairs/mlm_nsp_8_seed12347", "12347"),
                  ("fine_tuning/pairs/none", "12345"),
                  ("fine_tuning/pairs/none_seed12346", "12346")]
  # Every restart starts from the same pre-trained checkpoint.
  assert {_flag(c, "init_checkpoint") for c in classifier_runs[:3]} == {
      str(out / "pretraining" / "mlm_nsp" / "ckpt-8")}
  with open(out / "ablation.json") as f:
    summary = json.load(f)
  # The fake's accuracy says which command wrote it: 0.5 + 0.01 x its rank.
  rank = lambda run: 1 + next(i for i, c in enumerate(runner.commands) if c[0] ==
                              "run_classifier.py" and _flag(c, "output_dir") == str(out / run))
  assert summary["scores"]["BERT (MLM + NSP)"]["pairs"] == pytest.approx(
      0.5 + 0.01 * rank("fine_tuning/pairs/mlm_nsp_8_seed12347"))
  assert summary["scores"]["No pre-training"]["pairs"] == pytest.approx(
      0.5 + 0.01 * rank("fine_tuning/pairs/none_seed12346"))
  entropy = demo_report.label_entropy("MRPC", str(out / "pairs"))
  assert 0.6 < entropy <= np.log(2) + 1e-9
  report = (out / "ablation.md").read_text()
  assert ("BERT (MLM + NSP) at step 8 on pairs, after seed 12345 (training loss 0.700, "
          "entropy %.3f), seed 12346 (training loss 0.700" % entropy) in report
  assert "No pre-training on pairs, after seed 12345 (training loss 0.700" in report
  before = len(runner.commands)
  ablation.main(["--output_dir=%s" % out, "--pretrain_steps=8", "--curve_points=1",
                 "--max_train_examples=40", "--objectives=mlm_nsp"])
  assert len(runner.commands) == before  # Everything done, restarts included.


def test_one_tiny_real_run(tmp_path):
  """The real commands at the smallest sizes, for the objective whose
  wiring differs most (LTR, with its causal config) and the model without
  pre-training: each reported score is what its fine-tuning run wrote."""
  from demo import corpus as demo_corpus
  corpus = tmp_path / "corpus.txt"
  demo_corpus.write_kjv_corpus(str(corpus), max_chapters=40)
  out = tmp_path / "ablation"
  command = [sys.executable, "-m", "bench.ablation", "--output_dir=%s" % out,
             "--corpus=%s" % corpus, "--vocab_size=600", "--pretrain_steps=4",
             "--curve_points=1", "--max_train_examples=64", "--dupe_factor=1",
             "--num_train_epochs=1", "--train_batch_size=16", "--objectives=ltr",
             "--fine_tune_restarts=0"]
  result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  with open(out / "ablation.json") as f:
    summary = json.load(f)
  assert sorted(summary["scores"]) == ["LTR & No NSP", "No pre-training"]
  for objective, name in (("ltr", "LTR & No NSP"), (None, "No pre-training")):
    run = "none" if objective is None else "%s_4" % objective
    written = ablation.read_results(str(out / "fine_tuning" / "pairs" / run / "eval_results.txt"))
    assert summary["scores"][name]["pairs"] == written["eval_accuracy"]
  assert "next_sentence_accuracy" not in summary["pretraining"]["LTR & No NSP"]
  # The stuck check read each fine-tuning run's last logged training loss.
  with open(out / "fine_tuning" / "pairs" / "ltr_4" / "run.log") as f:
    logged = float(re.findall(r"mean of the last \d+ steps ([0-9.]+)", f.read())[-1])
  last, _, _ = demo_report.fine_tuning_stuck("MRPC", str(out / "pairs"),
                                             str(out / "fine_tuning" / "pairs" / "ltr_4"))
  assert last == pytest.approx(logged, abs=1e-6)
  assert not (out / "pretraining" / "mlm_nsp").exists()
  for log in ("pretraining/ltr/run.log", "fine_tuning/pairs/ltr_4/run.log"):
    with open(out / log) as f:
      assert "bert_config_causal.json" in f.read()
  assert (out / "ablation.png").stat().st_size > 10000


def test_unknown_objective_is_one_line(capsys):
  with pytest.raises(SystemExit) as exit_info:
    ablation.parse_args(["--objectives=ltr,mlmx"])
  assert exit_info.value.code == 2
  assert "--objectives: unknown mlmx." in capsys.readouterr().err
