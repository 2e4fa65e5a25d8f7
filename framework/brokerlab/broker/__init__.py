"""The simulated broker model. It takes validated settings and ready plugin objects, and knows
nothing of files, Spark, reports or the command line."""
