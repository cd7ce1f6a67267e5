"""The build's kernels: the Makefile copies this into ``.venv/etc/ipython``.

IPython reads the configuration in its environment's ``etc/ipython`` at
every start, so every kernel that myst-nb starts for the book reads it.

A kernel sends printed text on a timer (every 0.2 s), so a print could be
cut between two stream messages at a different place in each build, and
myst-nb's stream merging (1.4) then puts a line break at the cut. Without
timed flushes the kernel sends the text when the cell ends or before a
figure: the same in every build.
"""

c = get_config()  # noqa: F821
c.IPKernelApp.exec_lines = [
    "import sys; sys.stdout.flush_interval = sys.stderr.flush_interval = 1e9"
]
# The build's kernels talk to the build over loopback TCP; ipykernel 7 warns
# about unencrypted TCP on every start, which buries the build's own log.
c.IPKernelApp.log_level = "ERROR"
