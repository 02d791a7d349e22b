"""Beam pipeline options for the project's pipelines, local unless told otherwise."""

from apache_beam.options.pipeline_options import PipelineOptions


def local_by_default(pipeline_args):
  """Pipeline options from the arguments. Without --runner: Beam's local
  engine (the DirectRunner's FnApiRunner, with its --direct_num_workers and
  --direct_running_mode), which the DirectRunner itself would use here, but
  only after trying to download the Prism runner from GitHub."""
  if not any(a == "--runner" or a.startswith("--runner=") for a in pipeline_args):
    pipeline_args = ["--runner=FnApiRunner"] + list(pipeline_args)
  return PipelineOptions(pipeline_args)
