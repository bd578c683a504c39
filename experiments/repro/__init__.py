"""reproduce.py's parts, one concern each:

  common.py    paths, the presets, the sizes every part shares
  plan.py      which runs each figure needs (Spec, plan)
  run.py       running them one at a time under the CPU lock, one CSV row each
  tables.py    medians with their sources, the study's claims, the Report being written
  figures.py   one function per figure: its plot, its text and tables
  report.py    REPORT.md: the header, the figures, the closing note
  machines.py  other machines' runs (--other-machine): added to runs.csv, split from this one's
  checks.py    the report checked against the CSV it names
"""
