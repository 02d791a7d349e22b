"""Beam pipeline options for the project's pipelines, local unless told otherwise."""

from apache_beam.options.pipeline_options import PipelineOptions

from plumbing.errors import UserError


def local_by_default(pipeline_args):
  """Pipeline options from the arguments the tool did not know.

  Without --runner: Beam's local engine (the DirectRunner's FnApiRunner, with
  its --direct_num_workers and --direct_running_mode), which the
  DirectRunner itself would use here, but only after trying to download the
  Prism runner from GitHub. An argument Beam does not know either is an
  error, not a warning: a misspelt flag of the tool would otherwise be
  dropped and the job run with its default.
  """
  if not any(a == "--runner" or a.startswith("--runner=") for a in pipeline_args):
    pipeline_args = ["--runner=FnApiRunner"] + list(pipeline_args)
  options = PipelineOptions(pipeline_args)
  unknown = (set(options.get_all_options(retain_unknown_options=True)) -
             set(options.get_all_options()))
  if unknown:
    raise UserError("Unknown arguments: %s (neither a flag of this tool nor a Beam "
                    "pipeline option)." % ", ".join("--" + u for u in sorted(unknown)))
  return options
