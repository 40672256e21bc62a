"""The relay's health figures (latest verdicts, latency, pass rates, queues, failing and flaky tests, the commit
matrix) computed from the store's rows, for the pages, badges, /metrics and `crcr status`.

Pure: no Buildbot, no Twisted, no database; buildmaster/services/every_master/health.py gathers the rows and gives them
here.
"""
