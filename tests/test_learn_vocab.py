"""Vocabulary learning: usable by FullTokenizer, few [UNK]s, specials in place."""

import collections
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, data_file
from data_prep import tokenization
from plumbing import text_io

CORPORA = [data_file("pretraining_corpus_a.txt"), data_file("pretraining_corpus_b.txt")]


@pytest.mark.parametrize("algorithm,num_unused", [("wordpiece", 0), ("sentencepiece", 3)])
def test_learned_vocab_tokenizes_its_corpus(tmp_path, algorithm, num_unused):
  out = tmp_path / "vocab.txt"
  result = subprocess.run(
      [sys.executable, "learn_vocab.py", "--input_file=" + ",".join(CORPORA),
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


def _block_text(block):
  """Every code point of a 256-block, each inside a word (as test_tokenization)."""
  return " ".join("x%sy%s" % (chr(cp), chr(cp)) for cp in range(block * 256, block * 256 + 256)
                  if not 0xD800 <= cp <= 0xDFFF)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_compiled_basic_tokens_are_basic_tokenizers(do_lower_case):
  """What learn_vocab counts (the compiled kernel stopped before WordPiece)
  against BasicTokenizer, which test_tokenization holds to the original: every
  code point, and random texts mixing scripts, marks, control characters,
  lone surrogates and over-long words."""
  from data_prep import compiled_tokenization
  from reference_makers import make_tokenizer_references as references
  compiled = compiled_tokenization.basic_tokenizer(do_lower_case)
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  texts = [_block_text(block) for block in range(0x110000 // 256)]
  texts += references.random_setting_texts("uncased_lower", data_file(
      "vocab/bert_uncased_vocab.txt"), 2026)[:5000]
  for start in range(0, len(texts), 500):
    part = texts[start:start + 500]
    assert compiled.basic_tokens_text(part).split() == [
        token for text in part for token in basic.tokenize(text)], start


def test_counts_are_the_basic_tokens_of_every_line(tmp_path):
  from vocab import word_counts
  corpus = tmp_path / "corpus.txt"
  lines = [_block_text(block) for block in (0, 3, 0x30, 0x4E, 0x1F6)] * 3
  lines += ["Héllo, WORLD!! naïve café — ΟΔΟΣ.", "", "  \t ", "東京タワー is tall."] * 4
  corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
  for do_lower_case in (True, False):
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    expected = collections.Counter(  # The lines as the counter reads them.
        t for _, line in text_io.iter_text_lines(str(corpus), errors="ignore")
        for t in basic.tokenize(line))
    assert word_counts.count_words([str(corpus)], do_lower_case) == expected
