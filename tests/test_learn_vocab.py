"""Vocabulary learning: usable by FullTokenizer, few [UNK]s, specials in place."""

import subprocess
import sys

import pytest

from conftest import REPO_ROOT, data_file
from data_prep import tokenization

CORPORA = [data_file("pretraining_corpus_a.txt"), data_file("pretraining_corpus_b.txt")]


@pytest.mark.parametrize("algorithm,num_unused", [("wordpiece", 0), ("sentencepiece", 3)])
def test_learned_vocab_tokenizes_its_corpus(tmp_path, algorithm, num_unused):
  out = tmp_path / "vocab.txt"
  result = subprocess.run(
      [sys.executable, "-m", "vocab.learn_vocab", "--input_file=" + ",".join(CORPORA),
       "--output_file=" + str(out), "--vocab_size=600", "--algorithm=" + algorithm,
       "--num_unused=%d" % num_unused],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  lines = out.read_text(encoding="utf-8").split("\n")[:-1]
  expected_head = (["[PAD]"] + ["[unused%d]" % i for i in range(num_unused)] +
                   ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])
  assert lines[:len(expected_head)] == expected_head
  assert len(lines) == len(set(lines)) and 100 < len(lines) <= 700
  assert any(t.startswith("##") for t in lines)

  tokenizer = tokenization.FullTokenizer(str(out), do_lower_case=True)
  assert tokenizer.vocab["[PAD]"] == 0
  total = unknown = 0
  for path in CORPORA:
    with open(path, encoding="utf-8") as f:
      for line in f:
        ids = tokenizer.tokenize_to_ids(line)
        total += len(ids)
        unknown += ids.count(tokenizer.vocab["[UNK]"])
  assert total > 1000
  assert unknown / total < 0.01, (unknown, total)
  # Words are split into pieces by the learned vocabulary, not character soup.
  assert total < 3 * sum(len(line.split()) for p in CORPORA for line in open(p, encoding="utf-8"))
