"""Driving runs: experiment matrices, their executors (process pool, Ray), the judge and validation.

Uses `mnemarket.run` to run and `mnemarket.reports` to measure and report (plans/structure.md).
"""
