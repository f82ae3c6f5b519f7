"""What the reporters of bench/ share: reading the files their scripts
write, and writing the tables and figures of bench/RESULTS.md.

A reporter is run as a script from bench/, so `import lib` finds this
file; bench/lib.sh is its counterpart for the shell scripts.
"""

import csv
import statistics


def read_meta(path):
    """META: its key=value lines as a dict (the value may hold '=')."""
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f
                    if "=" in line)


def read_tsv(path):
    """A tab-separated table under a header line: a dict a row.  Quotes
    are kept as they are: the scripts write no quoting."""
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t",
                                   quoting=csv.QUOTE_NONE))


def by_mode_rep(rows):
    """Rows with a mode and a repetition as {mode: {rep: row}}."""
    runs = {}
    for row in rows:
        runs.setdefault(row["mode"], {})[int(row["rep"])] = row
    return runs


def med_range(vs, fmt, unit="", sep=" to "):
    """The median of vs, then its min and max in brackets, each through
    fmt; unit after the median."""
    return (f"{fmt(statistics.median(vs))}{unit} "
            f"({fmt(min(vs))}{sep}{fmt(max(vs))})")


def duration(secs):
    """Whole seconds as minutes and seconds: '3 min 7 s'."""
    return f"{secs // 60} min {secs % 60} s"


def row(cells):
    """A row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"


def head(*titles):
    """The first two lines of a Markdown table: its titles and the line
    under them, as one string."""
    return row(titles) + "\n|" + "---|" * len(titles)
