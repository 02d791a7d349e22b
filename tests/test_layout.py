"""The layout's promises (docs/layout.md), read from the code's own imports.

Data flows one way: plumbing <- data_prep <- modeling <- serving <- tasks
(each kind of task with its model, outputs and export, and the one
fine-tuning driver) <- the scripts. A change that makes modeling import a
task, or plumbing import anything of ours, or a folder grow into a drawer,
fails here.
"""

import ast
import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

PACKAGES = ("plumbing", "data_prep", "tasks", "modeling", "serving", "vocab", "demo")
# What each package may import of ours (besides itself).
ALLOWED = {
    "plumbing": set(),
    "data_prep": {"plumbing"},
    "vocab": {"plumbing", "data_prep"},
    "tasks": {"plumbing", "data_prep", "modeling", "serving"},
    "modeling": {"plumbing", "data_prep"},
    "serving": {"plumbing", "data_prep", "modeling"},
    "demo": {"plumbing", "data_prep", "tasks"},
}
OURS = set(PACKAGES) | {"run_flags"}


def _library_files():
  """Every .py file of the library (not tests/, bench/), relative to the repo."""
  paths = []
  for directory, subdirectories, names in os.walk(REPO_ROOT):
    subdirectories[:] = [d for d in subdirectories
                         if not d.startswith(".") and d not in ("tests", "bench", "__pycache__")
                         and not d.endswith("_output")]
    paths += [os.path.relpath(os.path.join(directory, n), REPO_ROOT)
              for n in names if n.endswith(".py")]
  return sorted(paths)


def _module_name(path):
  name = path[:-3].replace(os.sep, ".")
  return name[:-len(".__init__")] if name.endswith(".__init__") else name


def _imports(path):
  """Our modules `path` imports, anywhere in the file (functions included)."""
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  modules = {_module_name(p) for p in _library_files()}
  found = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for alias in node.names:  # `from package import module`, or of a name in it.
        submodule = node.module + "." + alias.name
        found.add(submodule if submodule in modules else node.module)
  own_packages = {_module_name(path).rsplit(".", k)[0] for k in range(1, 4)}
  return {name for name in found if name in modules and name.split(".")[0] in OURS
          and name not in own_packages}


def _graph():
  return {_module_name(p): _imports(p) for p in _library_files()}


def test_packages_import_only_what_the_flow_allows():
  wrong = []
  for module, imported in _graph().items():
    package = module.split(".")[0]
    if package not in ALLOWED:
      continue  # The scripts: they wire everything.
    for name in imported:
      other = name.split(".")[0]
      if other != package and other not in ALLOWED[package]:
        wrong.append("%s imports %s" % (module, name))
  assert not wrong, wrong


def test_no_import_cycles():
  graph = _graph()
  state = {}

  def visit(module, path):
    state[module] = "open"
    for name in sorted(graph.get(module, ())):
      if state.get(name) == "open":
        raise AssertionError("cycle: " + " -> ".join(path + [module, name]))
      if name not in state:
        visit(name, path + [module])
    state[module] = "done"
  for module in sorted(graph):
    if module not in state:
      visit(module, [])


# What several kinds of task share, in tasks/; every other module or folder
# there is a kind of task, which imports no other kind (but the one it
# extends) and which no shared module imports.
SHARED_TASK_MODULES = {"driver", "metrics", "pair_packing", "sliding_windows", "table_files",
                       "tfds_data"}
EXTENDS = {"multi_label": {"classification"}}


def _cross_task_imports(graph):
  wrong = []
  for module, imported in graph.items():
    parts = module.split(".")
    if parts[0] != "tasks" or len(parts) < 2:
      continue
    kind = parts[1]
    for name in imported:
      other = name.split(".")
      if other[0] != "tasks" or len(other) < 2 or other[1] in SHARED_TASK_MODULES:
        continue
      if other[1] != kind and (kind in SHARED_TASK_MODULES or
                               other[1] not in EXTENDS.get(kind, ())):
        wrong.append("%s imports %s" % (module, name))
  return wrong


def test_a_kind_of_task_imports_no_other_kind():
  """Helpers two kinds share live in a shared module of tasks/; a kind may
  extend the one it is declared to (multi-label, classification)."""
  assert _cross_task_imports({"tasks.ner.task": {"tasks.classification.tfds"},
                              "tasks.multi_label": {"tasks.classification.task"},
                              "tasks.driver": {"tasks.squad.task"}}) == [
                                  "tasks.ner.task imports tasks.classification.tfds",
                                  "tasks.driver imports tasks.squad.task"]
  assert not _cross_task_imports(_graph())


def _is_private(name):
  return name.startswith("_") and not name.startswith("__")


def _private_names_of_others(path, source=None):
  """The private names (`_name`) of our other modules that `path` uses:
  `from module import _name`, or `module._name` through an imported module."""
  if source is None:
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
      source = f.read()
  modules = {_module_name(p) for p in _library_files()}
  this = _module_name(path)
  bound, found = {}, []
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name in modules:
          bound[alias.asname or alias.name] = alias.name
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for alias in node.names:
        if node.module + "." + alias.name in modules:
          bound[alias.asname or alias.name] = node.module + "." + alias.name
        elif node.module in modules and node.module != this and _is_private(alias.name):
          found.append("from %s import %s" % (node.module, alias.name))
  for node in ast.walk(ast.parse(source)):
    if (isinstance(node, ast.Attribute) and _is_private(node.attr) and
        isinstance(node.value, ast.Name) and bound.get(node.value.id, this) != this):
      found.append("%s.%s (line %d)" % (bound[node.value.id], node.attr, node.lineno))
  return found


def test_no_module_uses_another_s_private_names():
  """A module calls what another one offers (its public names); the
  original's private names that stay importable (tokenization._is_punctuation,
  run_classifier._truncate_seq_pair) are aliases of public ones."""
  assert _private_names_of_others("serving/rest.py", "from plumbing import files\n"
                                  "files._gfile()\n") == ["plumbing.files._gfile (line 2)"]
  assert _private_names_of_others(
      "tasks/ner/task.py", "from data_prep.tokenization import _is_control\n") == [
          "from data_prep.tokenization import _is_control"]
  wrong = {p: _private_names_of_others(p) for p in _library_files()}
  assert not {p: names for p, names in wrong.items() if names}


def _flag_writes_and_reads(path, source=None):
  """What `path` does with absl's flags that only the command line may:
  `absl.flags` imported by a library module (plumbing/cli.py, the command
  line's plumbing, excepted), or a value assigned into the flags (a decided
  setting written back)."""
  if source is None:
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
      source = f.read()
  library = os.sep in path and path != os.path.join("plumbing", "cli.py")
  found = []
  for node in ast.walk(ast.parse(source)):
    if library and isinstance(node, (ast.Import, ast.ImportFrom)):
      names = ([node.module + "." + a.name for a in node.names] if isinstance(node, ast.ImportFrom)
               else [a.name for a in node.names])
      found += ["imports absl.flags (line %d)" % node.lineno
                for name in names if name in ("absl.flags", "absl.flags.FLAGS")]
    elif isinstance(node, (ast.Assign, ast.AugAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      for target in targets:
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and
            target.value.id in ("FLAGS", "flag_values")):
          found.append("writes %s.%s (line %d)" % (target.value.id, target.attr,
                                                   node.lineno))
  return found


def test_only_the_command_line_touches_flags_and_nothing_writes_into_them():
  """Library code takes arguments; a setting decided from the flags and the
  model's files (the casing) is returned and logged, not written back."""
  assert _flag_writes_and_reads("run_x.py", "FLAGS.do_lower_case = True\n") == [
      "writes FLAGS.do_lower_case (line 1)"]
  assert _flag_writes_and_reads(os.path.join("tasks", "x.py"), "from absl import flags\n") == [
      "imports absl.flags (line 1)"]
  assert not _flag_writes_and_reads(os.path.join("plumbing", "cli.py"))
  wrong = {p: _flag_writes_and_reads(p) for p in _library_files()}
  assert not {p: found for p, found in wrong.items() if found}


# Flags several commands share in one meaning, each command keeping its own
# default and help text where they differ (run_squad.py's --max_seq_length).
SHARED_FLAGS = ("max_seq_length", "init_checkpoint", "eval_every_steps",
                "early_stopping_patience", "export_dir", "export_precision",
                "serving_max_batch_size", "serving_max_text_bytes")


def _flag_definitions(sources):
  """{flag name: [files]} of the DEFINE_* calls naming it in `sources`
  ({path: source})."""
  found = {}
  for path, source in sources.items():
    for node in ast.walk(ast.parse(source)):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
          node.func.attr.startswith("DEFINE_") and node.args and
          isinstance(node.args[0], ast.Constant)):
        found.setdefault(node.args[0].value, []).append(path)
  return found


def test_shared_flags_are_defined_once():
  assert _flag_definitions({"a.py": 'flags.DEFINE_integer("max_seq_length", 384, "")',
                            "b.py": 'flags.DEFINE_integer("max_seq_length", 128, "")'}) == {
                                "max_seq_length": ["a.py", "b.py"]}
  sources = {}
  for path in _library_files():
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
      sources[path] = f.read()
  defined = _flag_definitions(sources)
  assert {name: defined.get(name) for name in SHARED_FLAGS if len(defined.get(name, [])) != 1} == {}


def _lines(path):
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    return sum(1 for _ in f)


def test_no_folder_is_a_drawer():
  files = _library_files()
  total = sum(_lines(p) for p in files)
  for package in PACKAGES:
    inside = [p for p in files if p.startswith(package + os.sep)]
    assert sum(_lines(p) for p in inside) <= total / 3, package
  # The root is not counted: it holds the commands, one script each, as the
  # original's does (pyproject.toml lists them).
  for folder in {os.path.dirname(p) for p in files} - {""}:
    modules = [p for p in files if os.path.dirname(p) == folder
               and not p.endswith("__init__.py")]
    assert len(modules) <= 12, (folder, len(modules))


def test_every_package_says_what_belongs_in_it():
  for path in _library_files():
    if path.endswith("__init__.py"):
      with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
        docstring = ast.get_docstring(ast.parse(f.read()))
      assert docstring and len(docstring.split()) >= 8, path


def _scripts():
  """The command-line scripts at the top of the repo (they call cli.run)."""
  return sorted(n for n in os.listdir(REPO_ROOT) if n.endswith(".py") and
                "cli.run(" in open(os.path.join(REPO_ROOT, n), encoding="utf-8").read())


def _first_import_of_ours(name):
  """The first import of ours, TensorFlow's or Keras' in a top-level script,
  as the modules it names (None: no such import)."""
  with open(os.path.join(REPO_ROOT, name), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  for node in tree.body:
    if isinstance(node, ast.Import):
      modules = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      modules = [node.module + "." + alias.name for alias in node.names]
    else:
      continue
    if any(m.split(".")[0] in OURS | {"tensorflow", "keras", "tensorflow_text"}
           for m in modules):
      return modules
  return None


def test_scripts_load_tensorflow_through_plumbing_startup():
  """Anything of ours or TensorFlow's imported before plumbing.startup would
  load TensorFlow with matplotlib, a second or so more per command. The
  scripts that do not import it (the data and vocabulary commands) must not
  load TensorFlow at all on starting."""
  scripts = _scripts()
  assert {"run_classifier.py", "run_squad.py", "run_pretraining.py",
          "convert_checkpoint.py"} <= set(scripts)
  without = [n for n in scripts if _first_import_of_ours(n) != ["plumbing.startup"]]
  assert set(without) <= {"create_pretraining_data.py", "beam_pretraining_data.py",
                          "learn_vocab.py"}, without
  for name in without:
    if name == "beam_pretraining_data.py" and importlib.util.find_spec("apache_beam") is None:
      continue
    code = "import sys, %s\nassert 'tensorflow' not in sys.modules, 'loaded'\n" % name[:-3]
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                            text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, (name, result.stderr[-2000:])


def test_a_script_starts_without_matplotlib_and_leaves_it_importable():
  pytest.importorskip("matplotlib")  # Installed by make install (the demo's charts).
  code = ("import sys, run_classifier\n"
          "assert 'keras' in sys.modules and 'matplotlib' not in sys.modules, 'loaded'\n"
          "import matplotlib.pyplot\n")
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-2000:]
