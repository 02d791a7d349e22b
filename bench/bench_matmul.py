"""The machine's measured float32 matmul peak: a worker of bench/run.py.

  <python> -m bench.bench_matmul --framework=tf|torch

Times a 2048 x 2048 by 2048 x 2048 float32 matmul (large enough that the
kernel, not the call, dominates) with every core, and reports the best
GFLOP/s of several runs. The driver divides each model's achieved FLOP/s by
the higher of the TensorFlow and PyTorch figures.
"""

import argparse
import time

import numpy as np

from bench import common

N = 2048
REPEATS = 20


def _best_seconds(run):
  run()
  best = float("inf")
  for _ in range(REPEATS):
    start = time.perf_counter()
    run()
    best = min(best, time.perf_counter() - start)
  return best


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--framework", default="tf")
  args = parser.parse_args()
  a = np.random.RandomState(0).standard_normal((N, N)).astype(np.float32)
  if args.framework == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    x = torch.from_numpy(a)
    seconds = _best_seconds(lambda: torch.matmul(x, x))
  else:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    x = tf.constant(a)
    seconds = _best_seconds(lambda: tf.matmul(x, x).numpy())
  common.report_result({"gflops": 2.0 * N ** 3 / seconds / 1e9})


if __name__ == "__main__":
  main()
