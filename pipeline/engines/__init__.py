"""The engines that run the passes' data-parallel steps: Ray Data and Spark, behind one interface (engine.py)."""
