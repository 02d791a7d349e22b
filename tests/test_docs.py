"""The README and docs/ as a user reads them: every shell command names a
script that exists and flags it defines, and the Quick start runs as written."""

import ast
import csv
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from conftest import (REPO_ROOT, SHARED_DATA, data_file, minilm_directory, read_eval_results,
                      serve_from_fresh_process)

DOC_FILES = ([os.path.join(REPO_ROOT, "README.md"), os.path.join(REPO_ROOT, "bench", "README.md")]
             + sorted(glob.glob(os.path.join(REPO_ROOT, "docs", "*.md"))))
DOC_PAGES = ("tokenization", "pretraining_data", "pretraining", "accelerators", "ablations",
             "model", "checkpoints", "fine_tuning", "serving", "extract_features",
             "sentence_embeddings", "faithfulness", "reliability", "faq", "layout")
# Flags absl defines in every program.
ABSL_FLAGS = {"help", "helpfull", "helpshort", "helpxml", "flagfile", "undefok", "logtostderr",
              "alsologtostderr", "log_dir", "verbosity", "v", "stderrthreshold",
              "showprefixforinfo", "only_check_args", "run_with_pdb", "pdb",
              "run_with_profiling", "use_cprofile_for_profiling", "logger_levels"}


def _shell_blocks(path):
  """The ```sh / ```shell / ```bash blocks of a Markdown file, as
  (line number, text) with backslash continuations joined."""
  text = open(path, encoding="utf-8").read()
  for match in re.finditer(r"^```(?:sh|shell|bash)\n(.*?)^```", text, re.M | re.S):
    yield text[:match.start()].count("\n") + 2, match.group(1).replace("\\\n", " ")


def _commands(path):
  for line_number, block in _shell_blocks(path):
    for line in block.splitlines():
      words = shlex.split(line, comments=True)
      if words:
        yield line_number, words


def _module_file(name):
  base = os.path.join(REPO_ROOT, *name.split("."))
  for candidate in (base + ".py", os.path.join(base, "__init__.py")):
    if os.path.exists(candidate):
      return candidate
  return None


def _absl_flags(path, seen=None):
  """Flag names defined by a module and the project modules it imports."""
  seen = set() if seen is None else seen
  if path in seen:
    return set()
  seen.add(path)
  source = open(path, encoding="utf-8").read()
  names = set(re.findall(r"flags\.DEFINE_\w+\(\s*\"(\w+)\"", source))
  for node in ast.walk(ast.parse(source)):
    modules = []
    if isinstance(node, ast.Import):
      modules = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      modules = [node.module] + ["%s.%s" % (node.module, a.name) for a in node.names]
    for module in modules:
      found = _module_file(module)
      if found:
        names |= _absl_flags(found, seen)
  return names


def _argparse_flags(path):
  """Flags an argparse script defines, with those of the modules beside it
  that it imports (bench/common.py's shared arguments)."""
  source = open(path, encoding="utf-8").read()
  names = set(re.findall(r"\"--(\w+)\"", source))
  for loop in re.findall(r"for name in \(([^)]*)\):\s*\n\s*parser\.add_argument\(\"--\" \+ name",
                         source):
    names |= set(re.findall(r"\"(\w+)\"", loop))
  for module in re.findall(r"^(?:from bench )?import (\w+)", source, re.M):
    sibling = os.path.join(os.path.dirname(path), module + ".py")
    if os.path.exists(sibling):
      names |= set(re.findall(r"\"--(\w+)\"", open(sibling, encoding="utf-8").read()))
  return names | {"help"}


def _beam_options():
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  return set(PipelineOptions([]).get_all_options())


def _console_scripts():
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)["project"]["scripts"]


def _program(words):
  """(path of the program a command runs, its arguments), or None for
  commands that are not this project's (docker, curl, export, ...)."""
  head = words[0]
  if head.endswith("/python") or head in ("python", "python3"):
    if words[1] == "-m":
      if not os.path.isdir(os.path.join(REPO_ROOT, words[2].split(".")[0])):
        return None  # pytest, pip: not ours.
      return _module_file(words[2]) or words[2], words[3:]
    return os.path.join(REPO_ROOT, words[1]), words[2:]
  if head in _console_scripts():
    return _module_file(_console_scripts()[head].split(":")[0]), words[1:]
  return None


def test_every_page_the_readme_links_exists():
  readme = open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8").read()
  # Five walk-throughs (quick start, Hugging Face, own data, entities, sentence
  # vectors) and two generated tables: the rest belongs in docs/.
  assert len(readme.splitlines()) <= 300
  for page in DOC_PAGES:
    assert "docs/%s.md" % page in readme, page
    assert os.path.exists(os.path.join(REPO_ROOT, "docs", page + ".md")), page
  for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
    if not target.startswith("http"):
      assert os.path.exists(os.path.join(REPO_ROOT, target)), target
  for path in glob.glob(os.path.join(REPO_ROOT, "docs", "*.md")):
    text = open(path, encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
      if not target.startswith("http"):
        assert os.path.exists(os.path.join(REPO_ROOT, "docs", target)), (path, target)


def test_every_documented_command_parses():
  """Each command of the README, docs/ and bench/README.md runs a script that
  exists with flags it defines: fails when a flag is renamed or removed."""
  makefile = open(os.path.join(REPO_ROOT, "Makefile"), encoding="utf-8").read()
  beam_options = None
  checked = 0
  for path in DOC_FILES:
    for line_number, words in _commands(path):
      where = "%s:%d: %s" % (os.path.relpath(path, REPO_ROOT), line_number, " ".join(words))
      if words[0] == "make":
        for target in (w for w in words[1:] if "=" not in w):
          assert re.search(r"^%s:" % re.escape(target), makefile, re.M), where
        checked += 1
        continue
      program = _program(words)
      if program is None:
        continue
      script, arguments = program
      assert script and os.path.exists(script), where
      source = open(script, encoding="utf-8").read()
      defined = (_absl_flags(script) | ABSL_FLAGS if "from absl import flags" in source
                 else _argparse_flags(script))
      for argument in arguments:
        if not argument.startswith("--"):
          continue
        name = argument[2:].split("=")[0]
        if name in defined or (name.startswith("no") and name[2:] in defined):
          continue
        if "parse_known_flags" in source:  # Unknown flags go to Beam.
          beam_options = _beam_options() if beam_options is None else beam_options
          if name in beam_options:
            continue
        pytest.fail("%s: --%s is not a flag of %s" % (where, name, os.path.basename(script)))
      checked += 1
  assert checked >= 30, checked  # The pages hold this many commands at least.


def _write_released_checkpoint(directory):
  """A tiny checkpoint as Google publishes them: bert_config.json, vocab.txt
  and a name-based bert_model.ckpt, written by the project's own writer."""
  import modeling  # pylint: disable=g-import-not-at-top
  os.makedirs(directory)
  vocab = open(data_file("vocab/bert_uncased_vocab.txt"), encoding="utf-8").read()
  with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write(vocab)
  config = {"vocab_size": len(vocab.splitlines()), "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02}
  with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as f:
    json.dump(config, f)
  model = modeling.BertPretrainer(modeling.BertConfig.from_dict(config))
  modeling.save_original_checkpoint(model, os.path.join(directory, "bert_model.ckpt"))


def _write_mrpc(directory):
  """MRPC files: the first rows of the real ones when ../shared is here,
  else made-up rows in the same format."""
  os.makedirs(directory)
  real = os.path.join(SHARED_DATA, "glue", "MRPC")
  for name, rows in (("train.tsv", 64), ("dev.tsv", 24), ("test.tsv", 12)):
    if os.path.exists(real):
      with open(os.path.join(real, name), encoding="utf-8") as f:
        lines = f.read().splitlines()[:rows + 1]
    else:
      header = ("index\t#1 ID\t#2 ID\t#1 String\t#2 String" if name == "test.tsv"
                else "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String")
      lines = [header] + ["%d\t%d\t%d\tThe cat number %d sat on the mat .\tA cat %s on a mat ."
                          % (i if name == "test.tsv" else i % 2, 2 * i, 2 * i + 1, i,
                             "sat" if i % 2 else "ran away") for i in range(rows)]
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")


def _quick_start_commands(heading="## Quick start"):
  readme = open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8").read()
  section = readme.split(heading, 1)[1].split("\n## ", 1)[0]
  blocks = re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)
  return [line for block in blocks for line in block.replace("\\\n", " ").splitlines()
          if line.strip()]


def test_quick_start_runs_as_written(tmp_path):
  """The README's Quick start, copied as a user would after setting its two
  variables (only /tmp/ moved under the test's directory): a released-format
  checkpoint is fine-tuned, evaluated, predicts, exports, and the export,
  queried from a fresh process, answers what --do_predict wrote."""
  bert_base_dir = str(tmp_path / "uncased_L-2_H-32_A-2")
  glue_dir = str(tmp_path / "glue_data")
  _write_released_checkpoint(bert_base_dir)
  _write_mrpc(os.path.join(glue_dir, "MRPC"))
  ran = []
  for command in _quick_start_commands():
    words = shlex.split(command, comments=True)
    if not words or words[0] in ("export", "docker", "curl"):
      assert not words or words[0] != "export" or words[1].split("=")[0] in (
          "BERT_BASE_DIR", "GLUE_DIR")
      continue
    assert words[0] == ".venv/bin/python", command
    command = command.replace("/tmp/", str(tmp_path) + "/")  # First: the clone may be in /tmp.
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, BERT_BASE_DIR=bert_base_dir,
                                     GLUE_DIR=glue_dir, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
    ran.append((words, result.stdout))
  assert [w[1] for w, _ in ran] == ["run_classifier.py", "run_classifier.py", "query.py"]

  output_dir = tmp_path / "mrpc_output"
  results = read_eval_results(output_dir / "eval_results.txt")
  assert int(results["global_step"]) == 64 * 3 // 32
  assert 0 <= float(results["eval_accuracy"]) <= 1 and float(results["eval_loss"]) > 0
  with open(output_dir / "test_results.tsv", encoding="utf-8") as f:
    predicted = np.array([[float(x) for x in row] for row in csv.reader(f, delimiter="\t")])
  assert predicted.shape == (12, 2)
  np.testing.assert_allclose(predicted.sum(axis=1), 1, atol=1e-5)
  (prediction,) = json.loads(ran[2][1])["predictions"]  # TF Serving's answer.
  assert set(prediction) == {"label", "probabilities"}

  # The export answers the first test pair as --do_predict did.
  with open(os.path.join(glue_dir, "MRPC", "test.tsv"), encoding="utf-8") as f:
    first = f.read().splitlines()[1].split("\t")
  result = subprocess.run(
      [sys.executable, "query.py", "--export_dir=%s" % (tmp_path / "mrpc_export" / "1"),
       "--text_a=" + first[3], "--text_b=" + first[4]],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  (answer,) = json.loads(result.stdout)["predictions"]
  np.testing.assert_allclose(answer["probabilities"], predicted[0], atol=1e-5)
  assert answer["label"] == str(int(np.argmax(predicted[0])))


def test_hugging_face_start_runs_as_written(tmp_path):
  """The README's "Start from a Hugging Face checkpoint", as written: a
  Hugging Face directory (exact GELU) is converted, fine-tuned, exported and
  converted back into a directory of transformers' classifier."""
  from hf_directories import SIZES, write_hf_directory  # pylint: disable=g-import-not-at-top
  hf_dir = write_hf_directory(tmp_path / "hf", "BertModel", hidden_act="gelu",
                              sizes=dict(SIZES, max_position_embeddings=128))
  glue_dir = str(tmp_path / "glue_data")
  _write_mrpc(os.path.join(glue_dir, "MRPC"))
  commands = _quick_start_commands("## Start from a Hugging Face checkpoint")
  assert len(commands) == 3, commands
  for command in commands:
    command = command.replace("/tmp/", str(tmp_path) + "/")
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, HF_DIR=hf_dir, GLUE_DIR=glue_dir,
                                     TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
  imported = json.loads((tmp_path / "hf_bert" / "bert_config.json").read_text())
  assert imported["hidden_act"] == "gelu_exact"
  assert "eval_accuracy" in (tmp_path / "hf_mrpc_output" / "eval_results.txt").read_text()
  assert (tmp_path / "hf_mrpc_export" / "1" / "saved_model.pb").exists()
  out = tmp_path / "hf_mrpc_model"
  config = json.loads((out / "config.json").read_text())
  assert config["architectures"] == ["BertForSequenceClassification"]
  assert config["hidden_act"] == "gelu" and config["id2label"] == {"0": "0", "1": "1"}
  from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
  source = safetensors_numpy.load((tmp_path / "hf" / "model.safetensors").read_bytes())
  written = safetensors_numpy.load((out / "model.safetensors").read_bytes())
  assert sorted(written) == sorted(["bert." + name for name in source] +
                                   ["classifier.weight", "classifier.bias"])
  for name, value in source.items():  # Fine-tuned: same shapes, new values.
    assert written["bert." + name].shape == value.shape, name
  assert not np.array_equal(written["bert.encoder.layer.0.intermediate.dense.weight"],
                            source["encoder.layer.0.intermediate.dense.weight"])


def _write_reviews(directory):
  """train/dev/test.csv as the README's own-data section describes them; the
  test file has no label column."""
  os.makedirs(directory, exist_ok=True)
  words = {"positive": "the big red house is a cat", "negative": "the dog ran on the mat"}
  for split, rows in (("train", 16), ("dev", 8), ("test", 5)):
    with open(os.path.join(directory, split + ".csv"), "w", encoding="utf-8",
              newline="") as f:
      writer = csv.writer(f)
      writer.writerow(["review"] if split == "test" else ["review", "sentiment"])
      for i in range(rows):
        label = ("negative", "positive")[i % 2]
        writer.writerow([words[label] + ", %d." % i] + ([] if split == "test" else [label]))


def test_own_data_runs_as_written(tmp_path):
  """The README's "Fine-tune on your own data", as written, from a cased
  Hugging Face directory: the casing is followed without a flag, the labels
  are the file's names, and both reach the export and the directory
  converted back."""
  from hf_directories import SIZES, write_hf_directory  # pylint: disable=g-import-not-at-top
  hf_dir = write_hf_directory(tmp_path / "hf", "BertModel",
                              sizes=dict(SIZES, max_position_embeddings=128),
                              tokenizer_config={"do_lower_case": False})
  data = str(tmp_path / "reviews")
  _write_reviews(data)
  commands = _quick_start_commands("## Fine-tune on your own data")
  assert len(commands) == 4, commands
  outputs = []
  for command in commands:
    command = command.replace("/tmp/", str(tmp_path) + "/")
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, HF_DIR=hf_dir, MY_DATA=data,
                                     TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
    outputs.append(result)
  output_dir = tmp_path / "reviews_output"
  assert (output_dir / "labels.txt").read_text() == "negative\npositive\n"
  assert json.loads((output_dir / "tokenizer_config.json").read_text())["do_lower_case"] is False
  assert "Tokenizing with --do_lower_case=False" in outputs[1].stderr
  assert "eval_f1" in (output_dir / "eval_results.txt").read_text()
  with open(output_dir / "test_predictions.tsv", encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t"))
  assert rows[0] == ["index", "prediction"] and len(rows) == 6
  assert {r[1] for r in rows[1:]} <= {"negative", "positive"}
  assert re.search(r'"(negative|positive)"', outputs[2].stdout), outputs[2].stdout
  model = tmp_path / "reviews_model"
  config = json.loads((model / "config.json").read_text())
  assert config["id2label"] == {"0": "negative", "1": "positive"}
  assert json.loads((model / "tokenizer_config.json").read_text())["do_lower_case"] is False


def _write_tagged(directory):
  """train/dev.jsonl of tagged sentences and texts.txt of raw lines, as the
  README's entities section describes them."""
  os.makedirs(directory, exist_ok=True)
  sentences = [(["the", "cat", "sat", "on", "the", "mat", "."],
                ["O", "B-ANIMAL", "O", "O", "O", "B-THING", "O"]),
               (["a", "big", "red", "house", "is", "a", "dog"],
                ["O", "O", "O", "B-THING", "O", "O", "B-ANIMAL"])]
  for split, count in (("train", 64), ("dev", 4)):  # 6 steps of 32.
    with open(os.path.join(directory, split + ".jsonl"), "w", encoding="utf-8") as f:
      for i in range(count):
        tokens, tags = sentences[i % 2]
        f.write(json.dumps({"tokens": tokens, "tags": tags}) + "\n")
  with open(os.path.join(directory, "texts.txt"), "w", encoding="utf-8") as f:
    f.write("The cat sat on the mat.\nA big red house, a dog.\n")


def test_entities_section_runs_as_written(tmp_path):
  """The README's entities section, as written, from a cased Hugging Face
  directory: JSON Lines in, entities of raw text out (file, export, query),
  and a token classifier back with the run's tags and casing."""
  from hf_directories import SIZES, write_hf_directory  # pylint: disable=g-import-not-at-top
  hf_dir = write_hf_directory(tmp_path / "hf", "BertModel",
                              sizes=dict(SIZES, max_position_embeddings=128),
                              tokenizer_config={"do_lower_case": False})
  data = str(tmp_path / "tagged")
  _write_tagged(data)
  commands = _quick_start_commands("## Named entities, from a cased model to raw text")
  assert len(commands) == 4, commands
  outputs = []
  for command in commands:
    command = command.replace("/tmp/", str(tmp_path) + "/")
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, HF_CASED_DIR=hf_dir, MY_DATA=data,
                                     TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
    outputs.append(result)
  output_dir = tmp_path / "ner_output"
  labels = (output_dir / "labels.txt").read_text().split()
  assert sorted(labels) == ["B-ANIMAL", "B-THING", "I-ANIMAL", "I-THING", "O"]
  assert "eval_f1" in (output_dir / "eval_results.txt").read_text()
  with open(output_dir / "entities.jsonl", encoding="utf-8") as f:
    lines = [json.loads(line) for line in f]
  assert [l["text"] for l in lines] == ["The cat sat on the mat.", "A big red house, a dog."]
  for line in lines:  # Each entity is its span of the text, whole words only:
    words = [m.span() for m in re.finditer(r"\w+|[^\w\s]", line["text"])]  # Punctuation apart.
    for entity in line["entities"]:
      assert line["text"][entity["start"]:entity["end"]] == entity["text"]
      assert entity["start"] in [a for a, _ in words] and entity["end"] in [b for _, b in words]
      assert entity["type"] in ("ANIMAL", "THING")
  (answer,) = json.loads(outputs[2].stdout)["predictions"]
  assert answer["words"][-4:] == ["Berlin", ",", "Germany", "."]
  model = tmp_path / "ner_model"
  config = json.loads((model / "config.json").read_text())
  assert config["architectures"] == ["BertForTokenClassification"]
  assert config["id2label"] == {str(i): label for i, label in enumerate(labels)}
  assert json.loads((model / "tokenizer_config.json").read_text())["do_lower_case"] is False


def _write_pairs(data):
  """pairs.csv (anchor,positive: 32 pairs that say the same, one batch of
  the README's default size) and scored.csv (sentence1,sentence2,score), as
  the README's "Sentence vectors" names them."""
  things = ("guitar", "piano", "horse", "bicycle", "kitchen", "garden", "river", "train")
  people = ("A man", "A woman", "Two children", "An old man")
  rows = [("%s is playing with a %s." % (p, t), "%s plays with the %s." % (p, t))
          for p in people for t in things]
  with open(data / "pairs.csv", "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["anchor", "positive"])
    writer.writerows(rows)
  with open(data / "scored.csv", "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["sentence1", "sentence2", "score"])
    writer.writerows([(a, b, 5.0) for a, b in rows[:6]] +
                     [(rows[i][0], rows[i + 9][1], 0.5 * (i % 3)) for i in range(6)])


def test_sentence_vectors_run_as_written(tmp_path):
  """The README's "Sentence vectors", as written, on all-MiniLM-L6-v2 (a real
  sentence-transformers model): its vectors of the reference texts are
  sentence-transformers' own; fine-tuned on pairs, it scores the scored
  pairs and its export answers a unit vector."""
  hf_dir = minilm_directory()
  data = tmp_path / "data"
  data.mkdir()
  reference = "sentence_embedding_reference/"
  with open(data_file(reference + "input.txt"), encoding="utf-8") as f:
    (data / "sentences.txt").write_text(f.read(), encoding="utf-8")
  _write_pairs(data)
  commands = _quick_start_commands("## Sentence vectors")
  assert len(commands) == 3, commands
  for command in commands:
    command = command.replace("/tmp/", str(tmp_path) + "/")
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, HF_DIR=hf_dir, MY_DATA=str(data),
                                     TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
  with np.load(data_file(reference + "vectors.npz")) as expected:
    np.testing.assert_allclose(np.load(tmp_path / "vectors.npy"), expected["mean_normalized"],
                               rtol=0, atol=1e-5)
  results = read_eval_results(tmp_path / "pairs_output" / "eval_results.txt")
  assert int(results["global_step"]) == 32 * 3 // 32
  assert -1 <= float(results["eval_spearman"]) <= 1
  answer = serve_from_fresh_process(tmp_path / "pairs_export" / "1",
                                    text=["A man plays a guitar."])
  assert len(answer["embedding"][0]) == 384 and answer["num_tokens"] == [8]
  np.testing.assert_allclose(np.linalg.norm(answer["embedding"][0]), 1, atol=1e-5)


def test_keras_hub_presets_run_as_written(tmp_path):
  """The README's "keras-hub presets", as written: a preset keras-hub saved
  converts, is fine-tuned "as above" (the Hugging Face section's command on
  the converted files) and goes back to a preset that keras-hub's
  BertTextClassifier loads without a warning, giving our fine-tuned logits."""
  import warnings  # pylint: disable=g-import-not-at-top
  import keras_hub  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  vocab = open(data_file("vocab/bert_uncased_vocab.txt"), encoding="utf-8").read().splitlines()
  preset = str(tmp_path / "preset")
  keras_hub.models.BertBackbone(vocabulary_size=len(vocab), num_layers=2, num_heads=2,
                                hidden_dim=32, intermediate_dim=64).save_to_preset(preset)
  keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True).save_to_preset(preset)
  glue_dir = str(tmp_path / "glue_data")
  _write_mrpc(os.path.join(glue_dir, "MRPC"))
  convert_in, convert_out = _quick_start_commands("## keras-hub presets")
  (fine_tune,) = [c for c in _quick_start_commands("## Start from a Hugging Face checkpoint")
                  if "run_classifier.py" in c]
  fine_tune = re.sub(r" --export_dir=\S+", "", fine_tune.replace("/tmp/hf_", "/tmp/kh_"))
  for command in (convert_in, fine_tune, convert_out):
    command = command.replace("/tmp/", str(tmp_path) + "/")
    command = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
    result = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, PRESET_DIR=preset, GLUE_DIR=glue_dir,
                                     TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, command + "\n" + result.stderr[-3000:]
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    classifier = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "kh_mrpc"),
                                                                 preprocessor=None)
  bert = tmp_path / "kh_bert"
  config = modeling.BertConfig.from_json_file(str(bert / "bert_config.json"))
  ours = modeling.BertClassifier(config, 2)
  modeling.load_checkpoint(ours, str(tmp_path / "kh_mrpc_output"), log=False)
  rng = np.random.RandomState(0)
  ids = rng.randint(0, len(vocab), size=(2, 9)).astype(np.int32)
  mask, segments = np.ones_like(ids), np.zeros_like(ids)
  theirs = classifier({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
  want = ours({"input_ids": ids, "input_mask": mask, "segment_ids": segments})["logits"]
  np.testing.assert_allclose(np.asarray(theirs), want.numpy(), rtol=0, atol=1e-5)
