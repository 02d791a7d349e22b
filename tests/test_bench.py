"""bench/run.py's arithmetic and table, on hand-computed values (the timings
themselves are measured by `make bench`, not by the tests)."""

import json
import os
import subprocess
import sys

import numpy as np

from bench import bench_pretrained_glue
from bench import bench_tokenizer
from bench import run
from conftest import REPO_ROOT, data_file


def test_model_flops_by_hand():
  # BERT-Base, sequence 128, one example: 12 layers x 128 tokens x
  # (24 * 768^2 + 4 * 128 * 768) = 22,347,251,712.
  assert run.model_flops("infer", "base", 1) == 22_347_251_712
  # Training: three times the forward, plus the masked-LM head on 20 positions
  # (2 * 128^2 + 2 * 128 * 30522 each), BERT-Tiny (2 layers, 128 wide), batch 8.
  forward = 8 * 128 * 2 * (24 * 128 ** 2 + 4 * 128 * 128) + 8 * 20 * (
      2 * 128 ** 2 + 2 * 128 * 30522)
  assert run.model_flops("train", "tiny", 8) == 3 * forward
  # SQuAD reads sequence 384.
  assert run.model_flops("squad", "tiny", 1) == 3 * 384 * 2 * (24 * 128 ** 2 + 4 * 384 * 128)


def test_ratios_point_the_same_way_for_times_and_rates():
  seconds = run.Benchmark("t", "a time", "s", False, ["hf", "ours"])
  rate = run.Benchmark("r", "a rate", "ex/s", True, ["hf", "ours"])
  assert seconds.ours_better_by(ours=1.0, peer=3.0) == 3.0
  assert rate.ours_better_by(ours=30.0, peer=10.0) == 3.0
  assert seconds.ours_better_by(ours=2.0, peer=1.0) == 0.5


def test_table_cells():
  step = run.Benchmark("train_x", "Step", "s", False, ["original", "ours"], flops=50e9)
  latency = run.Benchmark("infer_1", "Latency", "ms", False, ["original", "hf", "ours"],
                          flops=10e9)
  medians = {"train_x": {"original": 2.0, "ours": 1.0},
             "infer_1": {"original": 0.2, "hf": None, "ours": 0.1}}
  lines = run.table([step, latency], medians, peak=100.0, peers=["original", "hf", "ours"])
  rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines.splitlines()[2:]]
  # 50 GFLOP in 2 s is 25 GFLOP/s: 25% of a 100 GFLOP/s peak; hf has no step row.
  assert rows[0] == ["Step", "s", "2 (25%)", "n/a", "1 (50%)", "2.00x", ""]
  # Latency is shown in ms; a failed worker says so.
  assert rows[1] == ["Latency", "ms", "200 (50%)", "failed", "100 (100%)", "2.00x", ""]


def test_ratios_carry_the_rounds_spread_and_a_split_verdict_is_noise():
  step = run.Benchmark("s", "Step", "s", False, [])
  # Rounds: ours 1.0 / 1.2 s against 2.0 / 2.1 s: each round 2.0x and 1.75x,
  # medians 1.1 and 2.05 s: 1.86x.
  assert run.ratio_text(step, [1.0, 1.2], [2.0, 2.1]) == "1.86x (1.75-2.00x)"
  # One round ours wins by 1.1x, the other loses 0.8x: no winner.
  assert run.ratio_text(step, [1.0, 1.25], [1.1, 1.0]) == "within noise (0.80-1.10x)"
  # A failed round (None) is left out with its partner; one round left.
  assert run.ratio_text(step, [1.0, None], [3.0, 2.0]) == "3.00x"
  assert run.ratio_text(step, [None], [3.0]) == ""


def test_readme_summary_from_a_results_file():
  results = {"date": "2026-12-05", "rounds": 2,
             "machine": {"cpu": "Some CPU", "cores": 2},
             "tokenizers": {"ours": {"english_1": 40.0, "mixed_1": 30.0},
                            "original": {"english_1": 1.0, "mixed_1": 2.0}},
             "benchmarks": [
                 {"key": "infer_32", "title": "Inference", "unit": "ex/s",
                  "higher_is_better": True,
                  "values": {"original": [10.0, 12.0], "ours": [20.0, 18.0]}}]}
  lines = run.readme_summary(results).splitlines()
  assert lines[0].startswith(
      "One `make bench BERT_ORIGINAL_DIR=...` run on 2026-12-05: Some CPU, 2 cores, 2 rounds.")
  results.update(quick=True, machine={"cpu": "Some CPU", "cores": 2, "cpu_flags": ["avx2"]})
  assert run.readme_summary(results).startswith(
      "One `make bench BERT_ORIGINAL_DIR=... BENCH_ARGS=\"--quick --rounds=2\"` run on "
      "2026-12-05: Some CPU (avx2), 2 cores, 2 rounds.")
  results.update(rounds=1)
  assert run.readme_summary(results).startswith(
      "One `make bench BERT_ORIGINAL_DIR=... BENCH_ARGS=--quick` run on 2026-12-05: "
      "Some CPU (avx2), 2 cores, 1 round.")
  assert lines[2:] == ["| row | vs original |", "|---|---:|",
                       "| Tokenization, one thread, English / mixed | 40.0x / 15.0x |",
                       # Medians 19 / 11 = 1.73x; rounds 2.00x and 1.50x.
                       "| Inference | 1.73x (1.50-2.00x) |"]


def test_pretrained_summary_from_a_report():
  report = {"learning_rate": 5e-5, "train_rows": {"MRPC": 3667, "CoLA": 8551},
            "machine": {"cpu": "Some CPU", "cores": 2},
            "results": {
                "MRPC": {"ours": {"seeds": [1, 2], "cpus": ["Some CPU (avx2)"],
                                  "eval_accuracy": [0.78, 0.80], "eval_f1": [0.85, 0.86],
                                  "seconds": [300.0, 340.0]},
                         "hf": {"seeds": [1], "cpus": ["Some CPU (avx2)"],
                                "eval_accuracy": [0.767], "eval_f1": [0.845],
                                "seconds": [480.0]}},
                "CoLA": {"ours": {"seeds": [1], "eval_mcc": [0.3], "seconds": [100.0]}}}}
  lines = bench_pretrained_glue.readme_summary(report).splitlines()
  assert "learning rate 5e-05" in lines[0] and "runs on Some CPU (avx2), 2 cores" in lines[0]
  # 78 and 80: mean 79.0, sd 1.41; one Hugging Face seed has no sd; times
  # median 320 against 480 s.
  assert lines[4] == ("| MRPC (3667) | accuracy / F1 | 79.0 ± 1.4 / 85.5 ± 0.7 | "
                      "76.7 / 84.5 | 2 / 1 | 1.50x |")
  assert lines[5] == "| CoLA (8551) | Matthews corr. | 30.0 | - | 1 / 0 |  |"


def test_pretrained_report_says_whether_ours_is_within_hugging_faces_sd():
  results = {"RTE": {"ours": {"seeds": [1, 2, 3], "eval_accuracy": [0.552, 0.549, 0.552]},
                     "hf": {"seeds": [1, 2, 3], "eval_accuracy": [0.556, 0.560, 0.549]}}}
  lines = bench_pretrained_glue.report(results, {"RTE": 2490}, 5e-5).splitlines()
  # Means 55.10 and 55.50: -0.40 points; Hugging Face's sd 0.557 by hand.
  assert "| -0.40 (sd 0.56): within |" in lines[4]
  results["RTE"]["hf"]["eval_accuracy"] = [0.556, 0.557, 0.556]
  lines = bench_pretrained_glue.report(results, {"RTE": 2490}, 5e-5).splitlines()
  assert "| -0.53 (sd 0.06): outside |" in lines[4]
  assert bench_pretrained_glue.gap([0.5], [0.5]) == "-"  # One seed has no sd.


def test_the_readmes_expected_results_are_the_published_run():
  """README.md's table of fine-tuning results from a real pretrained model
  is what `python -m bench.bench_pretrained_glue --summary` makes of
  docs/benchmarks/pretrained_glue.json."""
  import json  # pylint: disable=g-import-not-at-top
  from conftest import REPO_ROOT  # pylint: disable=g-import-not-at-top
  with open(os.path.join(REPO_ROOT, "docs", "benchmarks", "pretrained_glue.json"),
            encoding="utf-8") as f:
    report = json.load(f)
  with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
    readme = f.read()
  start = readme.index("-->\n", readme.index("<!-- pretrained summary:")) + len("-->\n")
  end = readme.index("<!-- end of pretrained summary -->")
  assert readme[start:end].strip() == bench_pretrained_glue.readme_summary(report)
  assert {"MRPC", "CoNLL-2003"} <= set(report["results"])


def test_differing_lines_and_the_tokenizer_table(tmp_path):
  def save(name, rows):
    path = str(tmp_path / name)
    np.savez(path, lengths=np.array([len(r) for r in rows]),
             ids=np.array([i for r in rows for i in r], np.int64))
    return path
  original = save("original.npz", [[1, 2], [3], [], [4, 5]])
  peer = save("peer.npz", [[1, 2], [3, 9], []])  # Fewer lines: compared on 3.
  assert bench_tokenizer._differing_lines(peer, original) == (1, 4)  # pylint: disable=protected-access
  figures = {"tftext_fast": {"english_1": 10.0, "mixed_1": 5.0, "english_0": 20.0,
                             "english_differ": 0, "mixed_differ": 7, "lines_english": 100,
                             "lines_mixed": 50},
             "ours": {"english_1": 40.0, "mixed_1": 25.0, "english_0": 40.0, "mixed_0": 30.0,
                      "english_differ": 0, "mixed_differ": 0}}
  lines = bench_tokenizer.table(figures).splitlines()
  rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:4]]
  assert rows[0] == ["tftext_fast", "10.00", "5.00", "20.00", "n/a", "0 / 7", "4.0x / 5.0x"]
  assert rows[1] == ["ours", "40.00", "25.00", "40.00", "30.00", "0 / 0", ""]
  assert lines[-1].endswith("lines of 100 English and 50 mixed.")


def test_host_stolen_seconds_read_from_the_steal_column(tmp_path):
  from bench import common  # pylint: disable=g-import-not-at-top
  stat = tmp_path / "stat"
  # user nice system idle iowait irq softirq steal guest guest_nice
  stat.write_text("cpu  5000 10 300 9000 16 0 19 %d 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
                  % (3 * os.sysconf("SC_CLK_TCK")))
  assert common.host_stolen_seconds(str(stat)) == 3.0
  stat.write_text("cpu  5000 10 300\n")  # An old kernel's line without the column.
  assert common.host_stolen_seconds(str(stat)) is None
  assert common.host_stolen_seconds(str(tmp_path / "absent")) is None
  assert common.stolen_between(1.5, 4.0) == 2.5
  assert common.stolen_between(None, 4.0) is None


def test_finetuning_peers_read_the_rows_our_processors_read(tmp_path):
  """bench_finetune_glue.py's own reader (for Hugging Face) gives the texts
  and labels that run_classifier.py trains on, for each task it times."""
  from bench import bench_finetune_glue  # pylint: disable=g-import-not-at-top
  from conftest import shared_path  # pylint: disable=g-import-not-at-top
  from tasks.classification import glue  # pylint: disable=g-import-not-at-top
  glue_dir = shared_path("glue")
  for task in bench_finetune_glue.COLUMNS:
    data_dir = str(tmp_path / task)
    assert bench_finetune_glue.task_data(glue_dir, task, data_dir, 50) == 50
    processor = glue.get_processor(task)
    for split, rows in (("train", 50), ("dev", None)):
      ours = [(e.text_a, e.text_b, e.label)
              for e in getattr(processor, "get_%s_examples" % split)(data_dir)]
      theirs = bench_finetune_glue.read_rows(task, os.path.join(data_dir, split + ".tsv"))
      assert theirs == ours and (rows is None or len(ours) == rows), (task, split)
    assert bench_finetune_glue.COLUMNS[task][4] == processor.get_labels()


def test_bench_is_a_package_its_modules_import_one_another_through():
  """Modules run as `python -m bench.<module>`: only the loader of the
  original's own scripts (common.import_original) touches the module path."""
  import glob  # pylint: disable=g-import-not-at-top
  from conftest import REPO_ROOT  # pylint: disable=g-import-not-at-top
  paths = sorted(glob.glob(os.path.join(REPO_ROOT, "bench", "*.py")))
  assert len(paths) > 10
  for path in paths:
    source = open(path, encoding="utf-8").read()
    edits = source.count("sys.path.insert") + source.count("sys.path.append")
    assert edits == (1 if path.endswith(os.sep + "common.py") else 0), path
    assert "absl" not in source, path  # One flags library: argparse.


def test_the_plan_of_a_full_and_a_quick_run():
  import types  # pylint: disable=g-import-not-at-top
  runner = types.SimpleNamespace(pretraining_data=None, model=None)
  for sizes in (run.FULL, run.QUICK):
    plans, memory = run.plan(runner, sizes, list(run.PEERS))
    assert [b.key for b, _ in plans] == (
        ["data_seconds"] + ["train_" + s for s in sizes["train_sizes"]] +
        ["classify", "squad", "infer_1", "infer_32"])
    assert memory.peers == ["original", "tf_models", "ours"]
  plans, memory = run.plan(runner, run.QUICK, ["hf", "ours"])
  assert memory.peers == ["ours"] and plans[1][0].peers == ["hf", "ours"]


def test_the_readmes_benchmark_table_is_the_published_run():
  """README.md's benchmark summary is what `python -m bench.run --summary`
  makes of docs/benchmarks/results.json, so its ratios cannot drift from
  the run they come from."""
  import json  # pylint: disable=g-import-not-at-top
  from conftest import REPO_ROOT  # pylint: disable=g-import-not-at-top
  with open(os.path.join(REPO_ROOT, "docs", "benchmarks", "results.json"),
            encoding="utf-8") as f:
    results = json.load(f)
  with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
    readme = f.read()
  start = readme.index("-->\n", readme.index("<!-- bench summary:")) + len("-->\n")
  end = readme.index("<!-- end of bench summary -->")
  assert readme[start:end].strip() == run.readme_summary(results)
  assert len(results["benchmarks"]) >= 7 and results["rounds"] >= 2


def test_serving_rows_compare_every_peer_with_ours_round_by_round():
  """bench_serving_dev's tables: a latency row reads the peer's time over
  ours, a throughput row our rate over the peer's, each with the rounds'
  spread as run.py's table prints it; a failed round is a gap."""
  import types  # pylint: disable=g-import-not-at-top
  from bench import bench_serving_dev  # pylint: disable=g-import-not-at-top
  args = types.SimpleNamespace(tasks="SST-2", requests=150, batch_tasks="SST-2", batch_size=32,
                               batches=20)
  latency, throughput = bench_serving_dev.timed_rows(args)
  assert (latency.requests, throughput.requests) == (150, 640)
  results = {(latency, "ours"): [{"p50": 40.0, "p95": 50.0}, {"p50": 44.0, "p95": 52.0}],
             (latency, "ort"): [{"p50": 26.0, "p95": 30.0}, {"p50": 27.0, "p95": 31.0}],
             (throughput, "ours"): [{"sentences_per_s": 25.0}, {"sentences_per_s": 26.0}],
             (throughput, "ort"): [{"sentences_per_s": 24.0}, None]}
  rows = bench_serving_dev.row_table(latency, ["ours", "ort"], results).splitlines()
  # Medians 42 and 26.5 ms: 0.63x; rounds 26/40 and 27/44.
  assert rows[2:] == ["| ours | 42.0 | 51.0 | 40.0 / 44.0 |  |",
                      "| ort | 26.5 | 30.5 | 26.0 / 27.0 | 0.63x (0.61-0.65x) |"]
  rows = bench_serving_dev.row_table(throughput, ["ours", "ort"], results).splitlines()
  assert rows[3] == "| ort | 24.0 | 24.0 / failed | 1.04x |"


def test_serving_checks_agreement_and_names_what_ort_fused():
  from bench import bench_serving_dev  # pylint: disable=g-import-not-at-top
  row = bench_serving_dev.Row("SST-2", 1, 2)
  results = {(row, "ours"): [None, {"probabilities": [[0.5, 0.5], [0.25, 0.75]]}],
             (row, "ort"): [{"probabilities": [[0.5, 0.5], [0.25, 0.7501]]}]}
  differences = bench_serving_dev.probability_differences(["ours", "ort"], results)
  assert list(differences) == ["ort"] and abs(differences["ort"] - 1e-4) < 1e-12
  line = bench_serving_dev.onnx_ops_line({"Attention": 12, "MatMul": 36, "Cast": 3,
                                          "Gather": 1})
  assert line.startswith("ort's optimized graph, nodes by op type: 12 Attention, "
                         "0 EmbedLayerNormalization, ")
  assert line.endswith("36 MatMul, 0 Gemm; 4 others (3 Cast, 1 Gather).")
  assert bench_serving_dev.in_batches(list(range(5)), 2) == [[0, 1], [2, 3], [4]]


def test_serving_peers_run_in_their_own_environments():
  from bench import bench_serving_dev  # pylint: disable=g-import-not-at-top
  from bench import environments  # pylint: disable=g-import-not-at-top
  assert [bench_serving_dev.environment_of(p) for p in bench_serving_dev.PEERS] == [
      "ours", "ours", "ours", "hf", "hf", "ort"]
  assert set(bench_serving_dev.PREDICTORS) == set(bench_serving_dev.PEERS)
  # The serving row installs hf and ort even when the table runs fewer peers.
  assert run.needed_environments(["hf", "ours"], ["serving_dev"]) == ["hf", "ours", "ort"]
  # torch exactly: a range would admit a newer CUDA build over the CPU wheel.
  for peer, spec in environments.PEERS.items():
    for package in spec["packages"] + spec["no_deps"]:
      assert not package.startswith("torch") or package == "torch==2.13.0", (peer, package)


def test_run_costs_page_is_what_the_run_measured(tmp_path):
  """bench_run_costs on a tiny model: the page's row holds the run's own
  figures (time, memory, disk, seconds a step) and its command."""
  output = tmp_path / "run_costs"
  result = subprocess.run(
      [sys.executable, "-m", "bench.bench_run_costs", "--rows=pretrain_128",
       "--bert_config_file=" + data_file("eval_reference/bert_config.json"),
       "--pretrain_steps=3", "--corpus_mb=0.05", "--output=%s" % output],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  report = json.loads((tmp_path / "run_costs.json").read_text())
  [row] = report["rows"]
  assert row["key"] == "pretrain_128" and row["batch_size"] == 32 and row["length"] == 128
  [command] = row["commands"]
  assert row["seconds"] == command["seconds"] > 0 and row["peak_mb"] == command["peak_mb"] > 0
  assert row["disk_mb"] > 0 and row["seconds_per_step"] > 0 and row["other_cpu_seconds"] >= 0
  page = (tmp_path / "run_costs.md").read_text()
  from bench import bench_run_costs  # pylint: disable=g-import-not-at-top
  cells = "| %s | %s | %.1f GB | %.2f GB | %.1f s a step after the first" % (
      row["what"], bench_run_costs._duration(row["seconds"]), row["peak_mb"] / 1e3,
      row["disk_mb"] / 1e3, row["seconds_per_step"])
  assert cells in page, page
  assert row["date"] in page and report["machine"]["cpu"] in page
  assert "`python run_pretraining.py --input_file=$SCRATCH/pretraining_128.tfrecord" in page
