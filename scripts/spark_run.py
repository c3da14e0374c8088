"""The file to hand spark-submit: the same command line as `python -m pipeline`, run as a Spark application.

    spark-submit --master spark://HOST:7077 scripts/spark_run.py run CONFIG.yaml [--set KEY=VALUE ...]

`run` gets engine=spark; the cluster is the one spark-submit names (its --master and --conf win over the
config's spark settings). The file only calls crawlbelt's command line: with crawlbelt installed, it may be
copied anywhere.
"""

import sys

from pipeline.cli import main

args = sys.argv[1:]
if args[:1] == ["run"]:
    args += ["--set", "engine=spark"]
sys.exit(main(args))
