"""SQuAD data against the original's outputs (tests/data/squad_reference)."""

import hashlib
import json
import os

import numpy as np
import pytest

from conftest import data_file, shared_path
from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import tf_example
from tasks.squad import evaluate as squad_evaluate
from tasks.squad import examples as squad_examples
from tasks.squad import features as squad_features
from tasks.squad import predictions as squad_predictions

REF = "squad_reference/"
VOCAB = "vocab/bert_uncased_vocab.txt"
LENGTHS = {"v1.1": (128, 64, 24), "v2.0": (128, 64, 24), "edge": (64, 16, 12),
           "edge_v2": (64, 16, 12)}


def _sha(text):
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _ref(relative):
  with open(data_file(REF + relative), encoding="utf-8") as f:
    return json.load(f)


def _input_path(name):
  """Path of a reference input as the README names it."""
  if name.startswith("edge.json"):
    return data_file(REF + "edge.json")
  return shared_path(name)


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(data_file(VOCAB), do_lower_case=True)


def _predict_file(run):
  if run.startswith("edge"):
    return data_file(REF + "edge.json")
  version = "v2.0" if run.startswith("v2.0") else "v1.1"
  return shared_path("checks/squad/%s/input_predict.json" % version)


def _features(examples, tokenizer, lengths, is_training):
  features = []
  seq, stride, query = lengths
  squad_features.convert_examples_to_features(examples, tokenizer, seq, stride, query,
                                              is_training, features.append)
  return features


def _row(f, is_training):
  row = {"unique_id": f.unique_id, "example_index": f.example_index,
         "doc_span_index": f.doc_span_index, "tokens": f.tokens,
         "token_to_orig_map": {str(k): v for k, v in f.token_to_orig_map.items()},
         "token_is_max_context": {str(k): v for k, v in f.token_is_max_context.items()},
         "input_ids": f.input_ids, "input_mask": f.input_mask,
         "segment_ids": f.segment_ids}
  if is_training:
    row.update(start_position=f.start_position, end_position=f.end_position,
               is_impossible=f.is_impossible)
  return row


def _check_features(features, expected, is_training):
  rows = [_row(f, is_training) for f in features]
  per = [[f.unique_id, f.example_index, f.doc_span_index, len(f.tokens),
          sum(f.input_mask), _sha(json.dumps(r, sort_keys=True))]
         for f, r in zip(features, rows)]
  if "per_feature" in expected:
    for got, want in zip(per, expected["per_feature"]):
      assert got == want
  assert len(features) == expected["num_features"]
  assert _sha(json.dumps(rows, sort_keys=True)) == expected["sha256"]


def _check_records(path, features, expected, is_training):
  """Our writer emits the canonical (sorted-map) serialisation directly."""
  with open(path, "rb") as f:
    data = f.read()
  assert len(data) == expected["file_bytes"]
  assert hashlib.sha256(data).hexdigest() == expected["sha256_canonical_file"]
  rows = []
  for f in features:
    row = {"unique_ids": [f.unique_id], "input_ids": f.input_ids,
           "input_mask": f.input_mask, "segment_ids": f.segment_ids}
    if is_training:
      row.update(start_positions=[f.start_position], end_positions=[f.end_position],
                 is_impossible=[int(f.is_impossible)])
    rows.append(row)
  assert _sha(json.dumps(rows, sort_keys=True)) == expected["sha256_features_json"]


# --- Examples -----------------------------------------------------------------

def _example_row(e):
  return [e.qas_id, e.question_text, e.doc_tokens, e.orig_answer_text,
          e.start_position, e.end_position, e.is_impossible]


@pytest.mark.parametrize("index", range(7))
def test_examples_match_the_original(index):
  ref = _ref("examples.json")["sets"][index]
  examples = squad_examples.read_squad_examples(
      _input_path(ref["file"]), ref["is_training"], ref["version_2_with_negative"])
  assert len(examples) == ref["count"]
  assert len(examples.skipped_qas_ids) == ref["skipped_warnings"]
  rows = []
  for e in examples:
    row = [e.qas_id, len(e.doc_tokens), _sha(json.dumps(e.doc_tokens)),
           _sha(json.dumps(e.question_text))]
    if ref["is_training"]:
      row += [e.orig_answer_text, e.start_position, e.end_position, e.is_impossible]
    else:
      assert e.orig_answer_text is None and e.start_position is None
      assert e.is_impossible is False
    rows.append(row)
  assert rows == ref["examples"]
  assert _sha(json.dumps([_example_row(e) for e in examples])) == ref["sha256_all"]


# --- Features -----------------------------------------------------------------

@pytest.mark.parametrize("run", ["v1.1", "v2.0", "edge", "edge_v2"])
def test_predict_features_and_records_match_the_original(run, tokenizer, tmp_path):
  expected = _ref(run + "/features.json")
  examples = squad_examples.read_squad_examples(_predict_file(run), False,
                                                run in ("v2.0", "edge_v2"))
  assert len(examples) == expected["num_examples"]
  path = str(tmp_path / "eval.tf_record")
  features = []
  with squad_features.FeatureWriter(path, is_training=False) as writer:
    def both(feature):
      features.append(feature)
      writer.process_feature(feature)
    squad_features.convert_examples_to_features(examples, tokenizer, *LENGTHS[run],
                                                is_training=False, output_fn=both)
  assert writer.num_features == len(features)
  _check_features(features, expected, False)
  _check_records(path, features, expected["eval.tf_record"], False)
  assert os.listdir(str(tmp_path)) == ["eval.tf_record"]


@pytest.mark.parametrize("key", ["v1.1", "v2.0", "edge"])
def test_train_features_match_the_original(key, tokenizer, tmp_path):
  ref = _ref("train_features/train_features.json")[key]
  examples = squad_examples.read_squad_examples(
      _input_path(ref["train_file"]), True, ref["version_2_with_negative"])
  assert len(examples) == ref["num_examples"]
  assert examples.skipped_qas_ids == ref["skipped_qas_ids"]
  assert examples.skip_warnings == ref["skip_warnings"]
  lengths = (ref["max_seq_length"], ref["doc_stride"], ref["max_query_length"])
  features = _features(examples, tokenizer, lengths, True)
  expected = ref["file_order"]
  _check_features(features, expected, True)
  assert [[f.unique_id, f.start_position, f.end_position, f.is_impossible]
          for f in features] == expected["positions"]

  import random
  shuffled = list(examples)
  random.Random(12345).shuffle(shuffled)
  assert [e.qas_id for e in shuffled] == ref["main_shuffled"]["qas_id_order"]
  path = str(tmp_path / "train.tf_record")
  with squad_features.FeatureWriter(path, is_training=True) as writer:
    features = _features(shuffled, tokenizer, lengths, True)
    for f in features:
      writer.process_feature(f)
  _check_features(features, ref["main_shuffled"], True)
  _check_records(path, features, ref["main_shuffled"]["train.tf_record"], True)


def test_feature_writer_leaves_nothing_on_failure(tmp_path):
  path = str(tmp_path / "out.tf_record")
  with pytest.raises(RuntimeError):
    with squad_features.FeatureWriter(path, is_training=False):
      raise RuntimeError("boom")
  assert os.listdir(str(tmp_path)) == []


# --- Predictions --------------------------------------------------------------

PREDICTION_RUNS = [
    # run dir, logits/features from, v2, threshold, n_best_size, max_answer_length
    ("v1.1", "v1.1", False, 0.0, 20, 30),
    ("v2.0", "v2.0", True, 0.0, 20, 30),
    ("v2.0_thresh", "v2.0", True, -1.0, 20, 30),
    ("v2.0_thresh_m7", "v2.0", True, -7.0, 20, 30),
    ("v1.1_nbest8_len2", "v1.1", False, 0.0, 8, 2),
    ("edge", "edge", False, 0.0, 20, 30),
    ("edge_v2", "edge_v2", True, 0.0, 20, 30),
]


def _close(a, b):
  """Same JSON structure, texts and order; numbers within 1e-5."""
  if isinstance(a, dict):
    assert list(a) == list(b)
    for k in a:
      _close(a[k], b[k])
  elif isinstance(a, list):
    assert len(a) == len(b)
    for x, y in zip(a, b):
      _close(x, y)
  elif isinstance(a, float) or isinstance(b, float):
    assert abs(a - b) <= 1e-5
  else:
    assert a == b


@pytest.mark.parametrize("run,source,v2,threshold,n_best,max_len", PREDICTION_RUNS)
def test_write_predictions_reproduces_the_original_files(
    run, source, v2, threshold, n_best, max_len, tokenizer, tmp_path):
  examples = squad_examples.read_squad_examples(_predict_file(source), False, v2)
  features = _features(examples, tokenizer, LENGTHS[source], False)
  raw = np.load(data_file(REF + source + "/raw_results.npz"))
  results = [squad_predictions.RawResult(int(u), [float(x) for x in s], [float(x) for x in e])
             for u, s, e in zip(raw["unique_ids"], raw["start_logits"], raw["end_logits"])]
  out = {name: str(tmp_path / name) for name in
         ("predictions.json", "nbest_predictions.json", "null_odds.json")}
  squad_predictions.write_predictions(
      examples, features, results, n_best, max_len, True, out["predictions.json"],
      out["nbest_predictions.json"], out["null_odds.json"],
      version_2_with_negative=v2, null_score_diff_threshold=threshold)
  names = ["predictions.json", "nbest_predictions.json"]
  if v2:
    names.append("null_odds.json")
  assert sorted(os.listdir(str(tmp_path))) == sorted(names)
  # The original's files for this run: all three, or only the ones a setting
  # changes (squad_reference/README.md).
  kept = {"v2.0_thresh": ["predictions.json"], "v2.0_thresh_m7": ["predictions.json"],
          "v1.1_nbest8_len2": ["predictions.json", "nbest_predictions.json"]}.get(run, names)
  for name in kept:
    ref_path = data_file(REF + run + "/" + name)
    assert os.path.exists(ref_path), ref_path
    with open(out[name], "rb") as f:
      got = f.read()
    with open(ref_path, "rb") as f:
      want = f.read()
    _close(json.loads(got), json.loads(want))
    assert got == want, name


# Random SQuAD-format files (accents, CJK, combining marks, control and
# zero-width characters, U+202F and other separators, answers starting or
# ending inside a word, unrecoverable answers) with random lengths, strides
# and n-best settings, and random logits with ties: the original's examples,
# features and prediction files (see squad_reference/README.md).
RANDOM_RUNS = ["184", "121", "10192", "404", "31"]


@pytest.mark.parametrize("run", RANDOM_RUNS)
def test_random_files_match_the_original(run, tmp_path):
  ref = _ref("random/%s/reference.json" % run)
  settings = ref["settings"]
  v2 = settings["v2"]
  tokenizer = tokenization.FullTokenizer(data_file(VOCAB), settings["do_lower_case"])
  lengths = (settings["max_seq_length"], settings["doc_stride"], settings["max_query_length"])
  for name, is_training in (("train.json", True), ("predict.json", False)):
    expected = ref[name]
    examples = squad_examples.read_squad_examples(
        data_file(REF + "random/%s/%s" % (run, name)), is_training, v2)
    assert len(examples) == expected["num_examples"]
    rows = [_example_row(e) for e in examples]
    assert _sha(json.dumps(rows, sort_keys=True)) == expected["examples_sha256"]
    features = _features(examples, tokenizer, lengths, is_training)
    _check_features(features, dict(num_features=expected["num_features"],
                                   sha256=expected["features_sha256"]), is_training)

  raw = np.load(data_file(REF + "random/%s/raw_results.npz" % run))
  results = [squad_predictions.RawResult(int(u), s, e) for u, s, e in
             zip(raw["unique_ids"], raw["start_logits"], raw["end_logits"])]
  names = ["predictions.json", "nbest_predictions.json", "null_odds.json"]
  squad_predictions.write_predictions(
      examples, features, results, settings["n_best_size"], settings["max_answer_length"],
      settings["do_lower_case"], *[str(tmp_path / n) for n in names],
      version_2_with_negative=v2,
      null_score_diff_threshold=settings["null_score_diff_threshold"])
  for name in names[:3 if v2 else 2]:
    with open(str(tmp_path / name), "rb") as f, open(
        data_file(REF + "random/%s/%s" % (run, name)), "rb") as g:
      assert f.read() == g.read(), name


def test_get_final_text_projects_back_or_gives_up():
  assert squad_predictions.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
  assert squad_predictions.get_final_text("1895", "(1895-1943).", True) == "1895"
  # Not found: the whole original text.
  assert squad_predictions.get_final_text("zzz", "Steve Smith's", True) == "Steve Smith's"


# --- Bad input ----------------------------------------------------------------

def _squad_file(tmp_path, text):
  path = tmp_path / "bad.json"
  path.write_text(text, encoding="utf-8")
  return str(path)


def _one_question(qa, context="Alpha beta gamma."):
  return json.dumps({"data": [{"paragraphs": [{"context": context, "qas": [qa]}]}]})


def test_malformed_json_names_the_file(tmp_path):
  path = _squad_file(tmp_path, '{"data": [')
  with pytest.raises(UserError, match="bad.json.*not a valid SQuAD JSON"):
    squad_examples.read_squad_examples(path, False)


def test_missing_field_names_file_and_question(tmp_path):
  path = _squad_file(tmp_path, _one_question({"id": "q-17", "answers": []}))
  with pytest.raises(UserError, match="bad.json.*'q-17'.*\"question\""):
    squad_examples.read_squad_examples(path, False)
  path = _squad_file(tmp_path, _one_question(
      {"id": "q-18", "question": "Which?", "answers": [{"text": "beta"}]}))
  with pytest.raises(UserError, match="bad.json.*'q-18'.*answer_start"):
    squad_examples.read_squad_examples(path, True)
  path = _squad_file(tmp_path, _one_question(
      {"id": "q-19", "question": "Which?", "answers": []}))
  with pytest.raises(UserError, match="bad.json.*'q-19'.*is_impossible"):
    squad_examples.read_squad_examples(path, True, version_2_with_negative=True)


def test_answer_outside_the_context_names_file_and_question(tmp_path):
  path = _squad_file(tmp_path, _one_question(
      {"id": "q-20", "question": "Which?",
       "answers": [{"text": "gamma.", "answer_start": 14}]}))
  with pytest.raises(UserError, match="bad.json.*'q-20'.*outside the context"):
    squad_examples.read_squad_examples(path, True)
  # Prediction ignores the answers, as the original.
  assert len(squad_examples.read_squad_examples(path, False)) == 1


# --- Evaluation ---------------------------------------------------------------

def _dataset(questions, version="1.1"):
  """questions: (id, [gold texts], is_impossible)."""
  qas = [{"id": qid, "question": "?", "is_impossible": impossible,
          "answers": [{"text": t, "answer_start": 0} for t in golds]}
         for qid, golds, impossible in questions]
  return {"version": version, "data": [{"paragraphs": [{"context": "x", "qas": qas}]}]}


def test_normalisation_and_scores():
  norm = squad_evaluate.normalize_answer
  assert norm("The  Cat,  sat!") == "cat sat"
  assert norm("an apple and A pear") == "apple and pear"
  assert norm("theatre") == "theatre"  # Articles only as whole words.
  assert squad_evaluate.exact_match_score("the Eiffel-Tower.", "eiffeltower")
  # pred "big red dog" vs gold "red dog barks": 2 common, P=2/3, R=2/3.
  assert squad_evaluate.f1_score("big red dog", "the red dog barks") == pytest.approx(2 / 3)
  assert squad_evaluate.f1_score("", "dog") == 0.0


def test_v1_evaluate_takes_the_best_gold_answer():
  dataset = _dataset([("a", ["Denver Broncos", "the Broncos"], False),
                      ("b", ["1990"], False), ("c", ["x y z w"], False)])
  # a: "Broncos" == "the Broncos" after normalisation (EM 1, F1 1);
  # b: wrong (0, 0); c: "x y" vs "x y z w": P=1, R=1/2, F1=2/3, EM 0.
  result = squad_evaluate.evaluate(dataset, {"a": "Broncos!", "b": "1991", "c": "x y"})
  assert result["exact"] == pytest.approx(100 / 3)
  assert result["exact_match"] == result["exact"]
  assert result["f1"] == pytest.approx(100 * (1 + 0 + 2 / 3) / 3)
  assert result["total"] == 3


def test_v2_evaluate_with_best_threshold():
  dataset = _dataset([("h1", ["blue"], False), ("h2", ["red car"], False),
                      ("n1", [], True), ("n2", [], True)], version="v2.0")
  preds = {"h1": "blue", "h2": "car", "n1": "", "n2": "green"}
  # Raw: h1 EM1 F1 1; h2 EM0 F1 2/3 (P=1, R=1/2); n1 gold [""] vs "" -> 1/1;
  # n2 gold [""] vs "green" -> 0/0.
  na = {"h1": 0.1, "h2": 0.6, "n1": 0.3, "n2": 0.8}
  result = squad_evaluate.evaluate(dataset, preds, na_probs=na, na_prob_thresh=0.5)
  # Threshold 0.5: h2 and n2 are predicted "no answer": h2 -> 0, n2 -> 1.
  # exact = (1 + 0 + 1 + 1) / 4, f1 = (1 + 0 + 1 + 1) / 4.
  assert result["exact"] == pytest.approx(75.0)
  assert result["f1"] == pytest.approx(75.0)
  assert result["HasAns_exact"] == pytest.approx(50.0)
  assert result["HasAns_f1"] == pytest.approx(50.0)
  assert result["NoAns_exact"] == pytest.approx(100.0)
  assert result["HasAns_total"] == 2 and result["NoAns_total"] == 2
  # Best threshold by hand: start with everything "no answer" (score = 2
  # no-answer questions right), then admit questions by ascending na prob:
  #   exact: h1 (0.1) +1 -> 3 (best, thresh 0.1); n1 (0.3) has "" -> +0 -> 3;
  #          h2 (0.6) +0 -> 3; n2 (0.8) has an answer -> -1 -> 2.
  #   f1:    h1 +1 -> 3 (thresh 0.1); n1 +0; h2 +2/3 -> 3.667 (best, 0.6);
  #          n2 -1 -> 2.667.
  assert result["best_exact"] == pytest.approx(75.0)
  assert result["best_exact_thresh"] == pytest.approx(0.1)
  assert result["best_f1"] == pytest.approx(100 * (11 / 3) / 4)
  assert result["best_f1_thresh"] == pytest.approx(0.6)
  no_probs = squad_evaluate.evaluate(dataset, preds)
  # Without probabilities nothing is thresholded: (1 + 0 + 1 + 0) / 4.
  assert no_probs["exact"] == pytest.approx(50.0)
  assert no_probs["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 4)
  assert "best_f1" not in no_probs


def _mixed_predictions(dataset, model_predictions):
  """The original's predictions with some replaced by a gold answer, by "" and
  by a gold answer inside extra words, so every kind of score occurs."""
  preds = {}
  questions = [qa for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]]
  for i, qa in enumerate(questions):
    golds = [a["text"] for a in qa["answers"]]
    if i % 3 == 0 and golds:
      preds[qa["id"]] = golds[-1]
    elif i % 5 == 1:
      preds[qa["id"]] = ""
    elif i % 7 == 2 and golds:
      preds[qa["id"]] = "the " + golds[0] + " of it"
    else:
      preds[qa["id"]] = model_predictions[qa["id"]]
  return preds


# Computed outside this repository by the scoring functions of SQuAD's
# official evaluate-v2.0.py (null odds as --na-prob-file, --na-prob-thresh as
# given) and evaluate-v1.1.py, on the same files and predictions.
OFFICIAL_V2_THRESH_1 = dict(
    exact=30.952380952380953, f1=36.967736369910284, total=42,
    HasAns_exact=34.61538461538461, HasAns_f1=44.332497212932, HasAns_total=26,
    NoAns_exact=25.0, NoAns_f1=25.0, NoAns_total=16,
    best_exact=42.857142857142854, best_exact_thresh=-8.531167030334473,
    best_f1=42.857142857142854, best_f1_thresh=-8.531167030334473)
OFFICIAL_V2_THRESH_MINUS_5 = dict(
    OFFICIAL_V2_THRESH_1, exact=28.571428571428573, f1=31.491545893719803,
    HasAns_exact=30.76923076923077, HasAns_f1=35.48634336677815)
OFFICIAL_V1 = dict(exact_match=34.61538461538461, f1=44.41939639308061)


@pytest.mark.parametrize("threshold, expected", [
    (1.0, OFFICIAL_V2_THRESH_1), (-5.0, OFFICIAL_V2_THRESH_MINUS_5)])
def test_v2_scores_are_the_official_scripts(threshold, expected):
  with open(shared_path("checks/squad/v2.0/input_predict.json")) as f:
    dataset = json.load(f)
  preds = _mixed_predictions(dataset, _ref("v2.0/predictions.json"))
  odds = _ref("v2.0/null_odds.json")
  result = squad_evaluate.evaluate(dataset, preds, na_probs=odds, na_prob_thresh=threshold)
  assert dict(result) == pytest.approx(expected, rel=1e-12)
  without_odds = squad_evaluate.evaluate(dataset, preds)
  assert "best_f1" not in without_odds
  assert without_odds["f1"] == pytest.approx(OFFICIAL_V2_THRESH_1["f1"], rel=1e-12)


def test_v1_scores_are_the_official_script():
  with open(shared_path("checks/squad/v1.1/input_predict.json")) as f:
    dataset = json.load(f)
  preds = _mixed_predictions(dataset, _ref("v1.1/predictions.json"))
  result = squad_evaluate.evaluate(dataset, preds)
  assert result["exact"] == result["exact_match"] == pytest.approx(
      OFFICIAL_V1["exact_match"], rel=1e-12)
  assert result["f1"] == pytest.approx(OFFICIAL_V1["f1"], rel=1e-12)
  assert result["total"] == 26


def test_has_answers_tells_scorable_files():
  assert squad_evaluate.has_answers(_dataset([("a", ["x"], False)]))
  assert not squad_evaluate.has_answers(_dataset([("a", [], False)]))
  assert squad_evaluate.has_answers(_dataset([("n", [], True)], "v2.0"), True)


def test_records_read_back_as_int32_feature_dicts(tokenizer, tmp_path):
  examples = squad_examples.read_squad_examples(data_file(REF + "edge.json"), True)
  path = str(tmp_path / "train.tf_record")
  with squad_features.FeatureWriter(path, is_training=True) as writer:
    features = _features(examples, tokenizer, LENGTHS["edge"], True)
    for f in features:
      writer.process_feature(f)
  read = list(tf_example.read_records(path, squad_features.reading_spec(64, False)))
  assert len(features) > 3 and len(read) == len(features)
  for f, got in zip(features, read):
    assert int(got["unique_ids"]) == f.unique_id
    assert got["input_ids"].numpy().tolist() == f.input_ids
    assert got["input_mask"].numpy().tolist() == f.input_mask
    assert got["segment_ids"].numpy().tolist() == f.segment_ids
    assert got["segment_ids"].dtype.name == "int32"
  # Training reads them repeated, shuffled, with the answer positions.
  training = list(tf_example.read_records(
      path, squad_features.reading_spec(64, True), is_training=True, seed=1).take(
          3 * len(features) + 200))
  assert set(training[0]) == {"unique_ids", "input_ids", "input_mask", "segment_ids",
                              "start_positions", "end_positions"}
  by_id = {f.unique_id: f for f in features}
  assert {int(t["unique_ids"]) for t in training} == set(by_id)
  for got in training:
    f = by_id[int(got["unique_ids"])]
    assert got["input_ids"].numpy().tolist() == f.input_ids
    assert (int(got["start_positions"]), int(got["end_positions"])) == (
        f.start_position, f.end_position)
