"""Operating the code location: the `eyt` CLI, launching and refreshing runs, the instance, dead runs, `eyt bench`."""
