"""Progress lines: the rate and time left of long loops (plumbing/progress.py),
in training, evaluation and prediction logs."""

import logging

from conftest import run_cli_cases
from plumbing import progress
from test_fine_tuning_protocol import tiny_mrpc_args, write_mrpc


class _Clock(object):

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_durations_read_as_people_write_them():
  assert [progress.duration(s) for s in (0, 12.4, 59.6, 200, 3599, 3600, 7500)] == [
      "0 s", "12 s", "1 min 00 s", "3 min 20 s", "59 min 59 s", "1 h 00 min", "2 h 05 min"]


def test_rate_leaves_out_the_first_update_and_time_left_follows_it(caplog):
  clock = _Clock()
  counter = progress.Progress("examples", total=1000, first_after=10, every=60, clock=clock)
  clock.now += 8  # Tracing and compiling, then the first batch of 100.
  with caplog.at_level(logging.INFO, logger="absl"):
    counter.advance(100)
    assert caplog.text == ""  # Not yet 10 s.
    assert counter.rate() == 100 / 8
    clock.now += 2  # 200 more in 2 s: 100/s from the first batch on.
    counter.advance(200)
  assert counter.rate() == 100.0 and counter.time_left() == 7.0
  assert "Ran 300 of 1,000 examples: 100.0 examples/s, about 7 s left." in caplog.text
  caplog.clear()
  with caplog.at_level(logging.INFO, logger="absl"):
    clock.now += 30
    counter.advance(300)  # Within a minute of the last line: none.
    assert caplog.text == ""
    clock.now += 31
    counter.advance(100)
  assert "Ran 700 of 1,000 examples" in caplog.text
  caplog.clear()
  with caplog.at_level(logging.INFO, logger="absl"):
    counter.advance(300)
    counter.finish()
  assert caplog.text.strip().endswith("Ran 1,000 examples in 1 min 11 s: 14.1 examples/s.")


def test_an_unknown_total_gives_no_time_left():
  clock = _Clock()
  counter = progress.Progress("lines", clock=clock)
  clock.now += 4
  counter.advance(40)
  assert counter.time_left() is None and counter.line() == "Ran 40 lines: 10.0 lines/s."


def test_training_evaluation_and_prediction_say_how_far_and_how_long(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  [result] = run_cli_cases("run_classifier.py", [
      tiny_mrpc_args(data) + ["--do_train", "--do_eval", "--do_predict", "--train_batch_size=8",
                              "--num_train_epochs=1", "--iterations_per_loop=3",
                              "--output_dir=%s" % (tmp_path / "out")]])
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stderr.splitlines()
  steps = [l for l in lines if "step " in l and "loss = " in l]
  assert len(steps) == 2 and "left" in steps[0], steps
  # Evaluation (40 dev pairs) and prediction (8 test pairs) end with their counts.
  assert any("Ran 40 examples in" in l and "examples/s" in l for l in lines), lines[-40:]
  assert any("Ran 8 examples in" in l for l in lines), lines[-40:]
