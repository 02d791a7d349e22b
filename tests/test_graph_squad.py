"""The in-graph SQuAD pipeline (serving/squad_ops.py) against the
Python one (tasks/squad/), which the original's outputs pin down
(test_squad_data.py, test_run_squad.py)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from conftest import data_file, shared_path
from data_prep import tokenization
from serving import squad_ops
from serving import tokenizer as graph_tokenizer
from tasks.squad import examples as squad_examples
from tasks.squad import features as squad_features
from tasks.squad import predictions as squad_predictions

UNCASED = "vocab/bert_uncased_vocab.txt"
# Short windows, a small stride and a long query: many windows per question.
MAX_SEQ, STRIDE, MAX_QUERY = 40, 3, 20


@pytest.fixture(scope="module")
def tokenizers():
  vocab = data_file(UNCASED)
  return (tokenization.FullTokenizer(vocab, do_lower_case=True),
          graph_tokenizer.GraphTokenizer(vocab, do_lower_case=True))


def _inputs(path):
  """(examples, questions, contexts) of a SQuAD file, in file order."""
  examples = squad_examples.read_squad_examples(path, is_training=False,
                                                version_2_with_negative=True)
  with open(path, encoding="utf-8") as f:
    data = json.load(f)["data"]
  contexts = [p["context"] for a in data for p in a["paragraphs"] for _ in p["qas"]]
  return examples, [e.question_text for e in examples], contexts


@pytest.fixture(scope="module")
def squad_v2(tokenizers):
  examples, questions, contexts = _inputs(shared_path("checks/squad/v2.0/input_predict.json"))
  features = []
  squad_features.convert_examples_to_features(examples, tokenizers[0], MAX_SEQ, STRIDE,
                                              MAX_QUERY, False, features.append)
  windows = tf.function(lambda q, c: squad_ops.windows(
      tokenizers[1], q, c, MAX_SEQ, STRIDE, MAX_QUERY))(tf.constant(questions),
                                                        tf.constant(contexts))
  return examples, questions, contexts, features, windows


def test_windows_are_the_original_features(squad_v2):
  examples, _, _, features, windows = squad_v2
  assert len(features) > 3 * len(examples)  # Several windows per question.
  for name in ("input_ids", "input_mask", "segment_ids"):
    np.testing.assert_array_equal(windows[name].numpy(),
                                  [getattr(f, name) for f in features], err_msg=name)
  assert windows["example"].numpy().tolist() == [f.example_index for f in features]
  offsets = windows["doc_offset"].numpy()
  for i, feature in enumerate(features):
    positions = sorted(feature.token_to_orig_map)
    assert positions == list(range(offsets[i], offsets[i] + len(positions)))
    n = len(positions)
    assert windows["word_index"].numpy()[i, :n].tolist() == [
        feature.token_to_orig_map[p] for p in positions]
    assert windows["is_max_context"].numpy()[i, :n].tolist() == [
        feature.token_is_max_context[p] for p in positions]


@pytest.mark.parametrize("v2,n_best,max_answer,threshold,step", [
    (False, 20, 30, 0.0, None),
    (False, 3, 4, 0.0, 0.5),   # Logits on a coarse grid: many tied scores.
    (True, 20, 30, 0.0, None),
    (True, 1, 30, -1.0, 0.5),  # One-best: the null answer can crowd out spans.
    (True, 7, 1, 1.5, 0.5),
    (False, 20, 30, 0.0, "-inf"),  # Every span scores -inf: still ranked.
    (True, 20, 30, 0.0, "-inf"),
])
def test_best_answers_are_the_python_predictions(squad_v2, tokenizers, tmp_path, v2, n_best,
                                                 max_answer, threshold, step):
  examples, questions, contexts, features, windows = squad_v2
  rng = np.random.RandomState(n_best)
  start, end = (rng.randn(len(features), MAX_SEQ).astype(np.float32) * 3 for _ in "se")
  if step == "-inf":
    start[:] = end[:] = -np.inf
    if v2:
      start[::2, 0] = end[::2, 0] = 0.0  # Some windows with a finite null score.
  elif step:
    start, end = np.round(start / step) * step, np.round(end / step) * step
  results = [squad_predictions.RawResult(f.unique_id, start[i], end[i])
             for i, f in enumerate(features)]
  predictions, nbest, null_odds = squad_predictions.write_predictions(
      examples, features, results, n_best, max_answer, True, str(tmp_path / "p.json"),
      str(tmp_path / "n.json"), str(tmp_path / "o.json"), version_2_with_negative=v2,
      null_score_diff_threshold=threshold)
  out = tf.function(lambda s, e: squad_ops.best_answers(
      tokenizers[1], windows, s, e, len(questions), n_best, max_answer, v2, threshold))(
          tf.constant(start), tf.constant(end))
  answers = [a.decode("utf-8") for a in out["answer"].numpy()]
  assert answers == [predictions[e.qas_id] for e in examples]
  if v2:
    np.testing.assert_array_equal(  # Exactly; NaN (from -inf - -inf) equals NaN.
        out["null_odds"].numpy(), [null_odds[e.qas_id] for e in examples])
  else:
    assert out["start_logit"].numpy().tolist() == [nbest[e.qas_id][0]["start_logit"]
                                                   for e in examples]
    assert out["end_logit"].numpy().tolist() == [nbest[e.qas_id][0]["end_logit"]
                                                 for e in examples]
  if step != "-inf":
    assert len(set(answers)) > len(answers) // 2  # Not one answer for all.


# (predicted normalised text, original text): the original's examples, text
# repeated in the span, accents and length-changing case maps, a no-break
# space inside a word, CJK, final sigma, and cases that fall back to the
# whole original text.
FINAL_TEXT_CASES = [
    ("steve smith", "Steve Smith's"), ("cafe", "Café au lait"), ("au lait", "Café au lait"),
    ("xyz", "abc"), ("", "abc"), ("aa", "aa-aa"), ("- aa", "aa-aa"), ("1990", "1990s-era"),
    ("era", "1990s-era"), ("is", "İstanbul is"), ("a b", "a\u00a0b c"), ("b", "a\u00a0b"),
    ("中", "中国 人"), ("国 人", "中国 人"), ("hello", "HELLO, world"),
    ("world", "HELLO,   world"), ("na ##c", "NAC"), ("σας", "ΣΑΣ x"), ("e", "e\u0301 x"),
    ("x", "e\u0301 x"),
]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_final_text_is_get_final_text(do_lower_case):
  graph = graph_tokenizer.GraphTokenizer(data_file(UNCASED), do_lower_case=do_lower_case)
  pred, orig = zip(*FINAL_TEXT_CASES)
  got = tf.function(lambda p, o: squad_ops.final_text(graph, p, o))(
      tf.constant(pred), tf.constant(orig)).numpy()
  expected = [squad_predictions.get_final_text(p, o, do_lower_case) for p, o in FINAL_TEXT_CASES]
  assert [g.decode("utf-8") for g in got] == expected
  # The cases reach both outcomes: a part of the text, and all of it.
  assert any(e != o for e, (_, o) in zip(expected, FINAL_TEXT_CASES))
  assert any(e == o for e, (_, o) in zip(expected, FINAL_TEXT_CASES))


def test_empty_context_has_no_window_and_no_answer(tokenizers):
  graph = tokenizers[1]

  @tf.function
  def answer(questions, contexts):
    windows = squad_ops.windows(graph, questions, contexts, MAX_SEQ, STRIDE, MAX_QUERY)
    logits = tf.zeros_like(windows["input_ids"], tf.float32)
    return (windows, squad_ops.best_answers(graph, windows, logits, logits, 2, 20, 30),
            squad_ops.best_answers(graph, windows, logits, logits, 2, 20, 30, True))

  windows, v1, v2 = answer(tf.constant(["who?", "what?"]), tf.constant([" \t", ""]))
  assert windows["input_ids"].shape[0] == 0
  # As write_predictions: "empty" in 1.1; in 2.0 no answer, and the
  # original's initial null score.
  assert v1["answer"].numpy().tolist() == [b"empty", b"empty"]
  assert v2["answer"].numpy().tolist() == [b"", b""]
  assert v2["null_odds"].numpy().tolist() == [1000000.0, 1000000.0]
