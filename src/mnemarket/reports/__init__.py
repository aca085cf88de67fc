"""Reading finished runs: metrics, inspect, the HTML report, the comparison report and their charts.

Reads the run records `mnemarket.run` writes; never drives a run (plans/structure.md).
"""
