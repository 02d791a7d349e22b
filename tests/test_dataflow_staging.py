"""Dataflow's `--setup_file=./setup.py` (docs/pretraining_data.md): before
submitting, Beam packages the clone into an sdist with the submitting venv's
own Python and build tools, and each worker pip-installs that sdist. A venv
that cannot build it (too old a setuptools, none at all on Python 3.12+)
stops the submission, and an sdist missing a module breaks every worker;
neither needs the cloud to show. Here Beam's own staging step runs on a
clean copy of the tree with this venv's Python."""

import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.portability import stager
from apache_beam.utils import processes
from packaging.requirements import Requirement
import pytest

from conftest import REPO_ROOT


def _pyproject(root=REPO_ROOT):
  with open(os.path.join(root, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def _pins(path):
  """name -> Requirement for each line of a requirements file."""
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    lines = [l.split("#")[0].strip() for l in f]
  return {r.name.lower(): r for r in map(Requirement, filter(None, lines))}


def test_the_beam_extras_pin_the_build_tools_pyproject_asks_for():
  """make install (beam.txt) and the Dataflow extra (beam-gcp.txt) each put
  in a setuptools that pyproject.toml's build backend accepts, and `build`,
  the tool Beam tries first; at the same versions in both."""
  beam, gcp = _pins("requirements/beam.txt"), _pins("requirements/beam-gcp.txt")
  for pins in (beam, gcp):
    assert "build" in pins
    for needed in map(Requirement, _pyproject()["build-system"]["requires"]):
      (version,) = [s.version for s in pins[needed.name.lower()].specifier]
      assert needed.specifier.contains(version), (needed, version)
  assert {n: str(beam[n]) for n in ("setuptools", "build")} == {
      n: str(gcp[n]) for n in ("setuptools", "build")}


def _copy_of_the_tracked_files(root):
  """What a clone holds (with the working tree's uncommitted edits): no
  .venv, no demo_output/ or bench/output/, no earlier build's egg-info."""
  try:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, check=True,
                             capture_output=True).stdout
  except (OSError, subprocess.CalledProcessError):
    pytest.skip("not a git checkout: no list of what a clone holds")
  for path in filter(None, listing.decode("utf-8").split("\0")):
    source = os.path.join(REPO_ROOT, path)
    if os.path.isfile(source):  # a tracked file deleted in the tree is left out
      os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
      shutil.copy2(source, os.path.join(root, path))


def _library_files(root):
  """The files a worker's install needs, by pyproject.toml's own lists: each
  py-module, each .py of every package its include patterns find, and the
  files its dynamic dependencies read."""
  project = _pyproject(root)
  setup = project["tool"]["setuptools"]
  wanted = {m + ".py" for m in setup["py-modules"]}
  patterns = setup["packages"]["find"]["include"]
  for directory, _, files in os.walk(root):
    package = os.path.relpath(directory, root).replace(os.sep, ".")
    if any(fnmatch.fnmatchcase(package, p) for p in patterns):
      wanted |= {os.path.relpath(os.path.join(directory, f), root).replace(os.sep, "/")
                 for f in files if f.endswith(".py")}
  dynamic = setup["dynamic"]
  wanted.update(dynamic["dependencies"]["file"])
  for extra in dynamic["optional-dependencies"].values():
    wanted.update(extra["file"])
  return wanted


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
  """Runs Beam's staging of job resources on the documented options, from
  the copy's root as the docs say; returns the copy, the workflow tarball
  Beam would upload, and each command Beam ran with whether it succeeded."""
  clone = tmp_path_factory.mktemp("clone")
  _copy_of_the_tracked_files(str(clone))
  temp_dir = tmp_path_factory.mktemp("staging")
  ran = []
  check_output = processes.check_output

  def recorded(args, *rest, **kwargs):
    try:
      result = check_output(args, *rest, **kwargs)
    except Exception:
      ran.append((list(args), False))
      raise
    ran.append((list(args), True))
    return result

  options = PipelineOptions([
      "--requirements_file=requirements.txt", "--setup_file=./setup.py",
      # Not this test's concern: pip-downloading the requirements, and
      # freezing this venv's packages for the job's log.
      "--requirements_cache=skip"])
  with pytest.MonkeyPatch.context() as patch:
    patch.delenv("BEAM_PYTHON", raising=False)  # so it is this venv's Python
    patch.setattr(processes, "check_output", recorded)
    patch.chdir(clone)
    resources = stager.Stager.create_job_resources(
        options, str(temp_dir), log_submission_env_dependencies=False)
  tarballs = []
  for resource in resources:
    role = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(resource.role_payload)
    if role.staged_name == stager.WORKFLOW_TARBALL_FILE:
      tarballs.append(beam_runner_api_pb2.ArtifactFilePayload.FromString(
          resource.type_payload).path)
  assert len(tarballs) == 1, resources
  return str(clone), tarballs[0], ran


def test_beam_builds_the_sdist_with_this_venvs_tools(staged):
  """No command Beam ran failed: `python -m build --no-isolation` built it
  (not Beam's fallback after a failure), with this interpreter."""
  _, tarball, ran = staged
  assert ran and all(ok for _, ok in ran), ran
  assert ran[0][0][:3] == [sys.executable, "-m", "build"], ran
  assert os.path.basename(tarball).startswith("bert_tf2_original-")


def test_the_sdist_holds_the_library(staged):
  clone, tarball, _ = staged
  wanted = _library_files(clone)
  # The lists above are pyproject.toml's: they are not empty.
  assert {"run_classifier.py", "modeling/__init__.py", "data_prep/pretraining/__init__.py",
          "requirements.txt", "requirements/beam.txt"} <= wanted
  with tarfile.open(tarball) as sdist:
    names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
  assert not wanted - names, sorted(wanted - names)
  assert {"pyproject.toml", "setup.py", "LICENSE"} <= names


def test_the_sdist_installs_and_imports(staged, tmp_path):
  """What a worker runs, offline: pip builds a wheel from the sdist with this
  venv's setuptools and installs it (dependencies are the workers' own
  requirements.txt install); the library and its commands are there and a
  module imports from there, not from the clone."""
  clone, tarball, _ = staged
  target = tmp_path / "site"
  subprocess.run(
      [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
       "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
       tarball], check=True, capture_output=True, cwd=tmp_path)
  python_files = {f for f in _library_files(clone) if f.endswith(".py")}
  missing = {f for f in python_files if not (target / f).is_file()}
  assert not missing, sorted(missing)
  commands = set(_pyproject(clone)["project"]["scripts"])
  assert commands <= set(os.listdir(target / "bin")), commands
  env = dict(os.environ, PYTHONPATH=str(target))
  out = subprocess.run(
      [sys.executable, "-c",
       "from data_prep import tokenization as t; print(t.__file__); "
       "print(t.BasicTokenizer(do_lower_case=True).tokenize('Hello, World!'))"],
      check=True, capture_output=True, text=True, cwd=tmp_path, env=env).stdout.splitlines()
  assert out[0] == str(target / "data_prep" / "tokenization.py")
  assert out[1] == "['hello', ',', 'world', '!']"
